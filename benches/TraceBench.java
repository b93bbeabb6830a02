/** Call-trace benchmark: a hot loop calls a recursive method to a fixed depth, whose innermost
 *  call is a native method (`probe`) implemented by the agent under test: it takes a stack
 *  trace of the current thread (or does nothing, the floor) and returns a checksum of what it
 *  saw (frames and lines), so both agents can be checked to see the same stack.
 *
 *    java -agentpath:<agent> TraceBench <depth> <calls>
 *  prints "program: calls=<n> loop_ms=<ms> cpu_ms=<ms> checksum=<sum>": the loop's wall time
 *  and the main thread's CPU time over it (steadier on a shared machine: the work is all on
 *  this thread). */
public class TraceBench {
    static native int probe();

    static int rec(int d) {
        if (d == 0) {
            return probe();
        }
        return rec(d - 1) + 1;
    }

    public static void main(String[] args) {
        int depth = Integer.parseInt(args[0]);
        long n = Long.parseLong(args[1]);
        long sum = 0;
        for (long i = 0; i < n / 5; i++) {
            sum += rec(depth);
        }
        sum = 0;
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long c0 = mx.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            sum += rec(depth);
        }
        long t1 = System.nanoTime();
        long c1 = mx.getCurrentThreadCpuTime();
        System.out.printf("program: calls=%d loop_ms=%.3f cpu_ms=%.3f checksum=%d%n", n, (t1 - t0) / 1e6, (c1 - c0) / 1e6, sum / n);
    }
}
