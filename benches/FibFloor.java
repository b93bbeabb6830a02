/** The floor of any JNI-based method-event emulation: recursive fib calling two empty static
 *  natives per call (as the shim's instrumentation calls `enter` and `exit`), whose C code only
 *  counts (benches/fib_floor.c, one atomic increment each, as the counting agent does). Same
 *  output as FibBench. Arguments: n, repetitions, the library's path. */
public class FibFloor {
    static native void enter(int method);
    static native void exit(int method);

    static int fib(int n) {
        enter(1);
        int r = n < 2 ? n : fib(n - 1) + fib(n - 2);
        exit(1);
        return r;
    }

    public static void main(String[] args) {
        System.load(args[2]);
        int n = Integer.parseInt(args[0]);
        int reps = Integer.parseInt(args[1]);
        long perFib = 0;
        for (int i = 0, a = 0, b = 1; i <= n; i++) {
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
