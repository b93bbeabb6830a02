/** A deterministic program for the trace tests: `Traced <n>` allocates n TracedMarker objects
 *  in the main thread. */
public class Traced {
    static Object keep;

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        for (int i = 0; i < n; i++) keep = new TracedMarker(i);
        System.out.println("done " + n);
    }
}

class TracedMarker {
    final int v;
    TracedMarker(int v) { this.v = v; }
}
