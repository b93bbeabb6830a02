/** The floor of benches/FibFloor.java through the foreign-function API (JDK 22+) instead of JNI:
 *  recursive fib making two downcalls per call to C functions that only count
 *  (benches/fib_floor.c `fib_floor_enter`/`fib_floor_exit`, the same atomic increment as the JNI
 *  natives), either ordinary downcalls (`ffm`: the thread goes to native state and back, as with
 *  JNI) or critical ones (`critical`: `Linker.Option.critical(false)`, no thread-state
 *  transition; the C code must not call back into the JVM nor block). Same output as FibBench.
 *  The API is reached by reflection at class initialisation only, so that this file compiles with
 *  the project's JDK 17 javac; the timed loop calls `static final` method handles, which the JIT
 *  compiles to direct calls. Arguments: mode (ffm|critical), n, repetitions, the library's path. */
import java.lang.invoke.MethodHandle;
import java.lang.reflect.Array;
import java.util.Optional;

public class FibFfm {
    static final MethodHandle ENTER, EXIT;
    static final String MODE = System.getProperty("fibffm.mode", "ffm");

    static {
        System.load(System.getProperty("fibffm.lib"));
        try {
            Class<?> linkerC = Class.forName("java.lang.foreign.Linker");
            Class<?> lookupC = Class.forName("java.lang.foreign.SymbolLookup");
            Class<?> descC = Class.forName("java.lang.foreign.FunctionDescriptor");
            Class<?> layoutC = Class.forName("java.lang.foreign.MemoryLayout");
            Class<?> segmentC = Class.forName("java.lang.foreign.MemorySegment");
            Class<?> optionC = Class.forName("java.lang.foreign.Linker$Option");
            Object linker = linkerC.getMethod("nativeLinker").invoke(null);
            Object lookup = lookupC.getMethod("loaderLookup").invoke(null);
            Object layouts = Array.newInstance(layoutC, 1);
            Array.set(layouts, 0, Class.forName("java.lang.foreign.ValueLayout").getField("JAVA_INT").get(null));
            Object desc = descC.getMethod("ofVoid", layouts.getClass()).invoke(null, layouts);
            Object options = Array.newInstance(optionC, MODE.equals("critical") ? 1 : 0);
            if (MODE.equals("critical")) Array.set(options, 0, optionC.getMethod("critical", boolean.class).invoke(null, false));
            var find = lookupC.getMethod("find", String.class);
            var downcall = linkerC.getMethod("downcallHandle", segmentC, descC, options.getClass());
            ENTER = (MethodHandle) downcall.invoke(linker, ((Optional<?>) find.invoke(lookup, "fib_floor_enter")).get(), desc, options);
            EXIT = (MethodHandle) downcall.invoke(linker, ((Optional<?>) find.invoke(lookup, "fib_floor_exit")).get(), desc, options);
        } catch (ReflectiveOperationException e) {
            throw new RuntimeException("the foreign-function API (JDK 22+) is not available", e);
        }
    }

    static int fib(int n) throws Throwable {
        ENTER.invokeExact(1);
        int r = n < 2 ? n : fib(n - 1) + fib(n - 2);
        EXIT.invokeExact(1);
        return r;
    }

    public static void main(String[] args) throws Throwable {
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
