// Allocation-heavy workload for scripts/bench-alloc.sh: n allocations (15/16 small objects,
// 1/16 int[8]) into a ring of `window` live slots, so that objects keep dying.
// Workload "scratch" (third argument) also allocates, every iteration, a small int[2] that never
// leaves the loop: once C2 has compiled the loop, a JVMTI sampling agent sees none of them
// (escape analysis presumably); an allocation hook that is handed the array makes it escape.
// Workload "escape" is "scratch" with each int[2] also stored in a static field, so that it
// escapes: every one of them is made, and a JVMTI sampling agent sees and tags them as the shim
// does (the floor that tags the same objects).
// Prints the loop's wall time and the loop thread's CPU time (less sensitive to a busy machine).
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class AllocBench {
    static final class Point {
        final int x, y;

        Point(int x, int y) {
            this.x = x;
            this.y = y;
        }
    }

    /** Where the "escape" workload's scratch arrays go: out of the loop, so they are made. */
    static int[] lastScratch;

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        int window = Integer.parseInt(args[1]);
        boolean escape = args.length > 2 && args[2].equals("escape");
        boolean scratch = escape || args.length > 2 && args[2].equals("scratch");
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        Object[] live = new Object[window];
        long arrays = 0, scratches = 0, sum = 0;
        long c0 = mx.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        // One loop per workload, each written out: a test inside the loop would change the code C2
        // makes of the others (the idle line compares that code's size).
        if (escape) {
            for (int i = 0; i < n; i++) {
                Object o;
                if ((i & 15) == 0) {
                    o = new int[8];
                    arrays++;
                } else {
                    o = new Point(i, i + 1);
                }
                live[i % window] = o;
                int[] t = new int[2];
                t[0] = i;
                t[1] = i >> 1;
                lastScratch = t;
                sum += t[0] ^ t[1];
            }
            scratches = n;
        } else if (scratch) {
            for (int i = 0; i < n; i++) {
                Object o;
                if ((i & 15) == 0) {
                    o = new int[8];
                    arrays++;
                } else {
                    o = new Point(i, i + 1);
                }
                live[i % window] = o;
                int[] t = new int[2];
                t[0] = i;
                t[1] = i >> 1;
                sum += t[0] ^ t[1];
            }
            scratches = n;
        } else {
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
        }
        long t1 = System.nanoTime();
        long c1 = mx.getCurrentThreadCpuTime();
        System.out.printf("program: objects=%d arrays=%d scratch_arrays=%d loop_ms=%.1f cpu_ms=%.1f check=%d%n", n - arrays, arrays,
                scratches, (t1 - t0) / 1e6, (c1 - c0) / 1e6, sum & 0xff);
    }
}
