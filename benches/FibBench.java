/** Call-heavy benchmark for METHOD_ENTRY/EXIT: recursive fib. Prints the timed loop's
 *  nanoseconds per call (wall time, and the main thread's CPU time), and the number of fib calls
 *  made. Arguments: n, repetitions. */
public class FibBench {
    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        int reps = Integer.parseInt(args[1]);
        long perFib = 0;
        for (int i = 0, a = 0, b = 1; i <= n; i++) { // calls(n) = 2 * fib(n + 1) - 1
            int t = a + b; a = b; b = t;
            perFib = 2L * a - 1;
        }
        long sum = 0;
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long c0 = mx.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        for (int r = 0; r < reps; r++) sum += fib(n);
        long t1 = System.nanoTime();
        long c1 = mx.getCurrentThreadCpuTime();
        long calls = perFib * reps;
        System.out.println("calls " + calls + " loop_ns " + (t1 - t0) + " ns_per_call " + String.format("%.2f", (t1 - t0) / (double) calls) + " sum " + sum
                + " cpu_ns_per_call " + String.format("%.2f", (c1 - c0) / (double) calls));
    }
}
