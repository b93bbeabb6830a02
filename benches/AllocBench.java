// Allocation-heavy workload for scripts/bench-alloc.sh: n allocations (15/16 small objects,
// 1/16 int[8]) into a ring of `window` live slots, so that objects keep dying.
public class AllocBench {
    static final class Point {
        final int x, y;

        Point(int x, int y) {
            this.x = x;
            this.y = y;
        }
    }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        int window = Integer.parseInt(args[1]);
        Object[] live = new Object[window];
        long arrays = 0, sum = 0;
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            Object o;
            if ((i & 15) == 0) {
                o = new int[8];
                arrays++;
            } else {
                o = new Point(i, i + 1);
            }
            live[i % window] = o;
            sum += i;
        }
        long t1 = System.nanoTime();
        System.out.printf("program: objects=%d arrays=%d loop_ms=%.1f check=%d%n", n - arrays, arrays, (t1 - t0) / 1e6, sum & 0xff);
    }
}
