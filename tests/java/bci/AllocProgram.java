package bci;

import java.io.ByteArrayInputStream;
import java.util.function.IntFunction;
import java.util.function.Supplier;

/**
 * Allocation patterns for the behavioural test of tests/bci.rs: run as compiled and with its
 * classes rewritten by {@code instrument_allocations}; the {@code result} lines must be the same,
 * and in the rewritten run each {@code count <what> <counted> <expected>} line must have
 * counted == expected (the arrays this program's own bytecode allocated while the tracker was on).
 */
public class AllocProgram {
    // Allocated by <clinit>, before the tracker is switched on: not counted.
    static int[] table = new int[4];
    static int sink;

    interface Shape {
        default double[] coords() {
            return new double[2];
        }
    }

    static final class Square implements Shape {}

    static int arrays() {
        return CountingTracker.arrays;
    }

    static void count(String what, int before, int expected) {
        System.out.println("count " + what + " " + (arrays() - before) + " " + expected);
    }

    static void result(String what, Object v) {
        System.out.println("result " + what + " " + v);
    }

    static int sumSquares(int n) {
        int[] a = new int[n];
        for (int i = 0; i < n; i++) {
            a[i] = i * i;
        }
        int s = 0;
        for (int v : a) {
            s += v;
        }
        return s;
    }

    static String joined(String... parts) {
        return String.join("-", parts);
    }

    static int lambdas(int n) {
        IntFunction<int[]> f = int[]::new;
        Supplier<long[][]> g = () -> new long[2][3];
        return f.apply(n).length + g.get().length + g.get()[1].length;
    }

    static int sync(Object lock, int n) {
        synchronized (lock) {
            return new byte[n].length;
        }
    }

    static int tryResources() throws Exception {
        try (ByteArrayInputStream in = new ByteArrayInputStream(new byte[] {7, 8, 9})) {
            byte[] buf = new byte[2];
            return in.read(buf) * 100 + buf[1];
        }
    }

    static Object[] nestedInit() {
        return new Object[] {new int[] {1, 2}, new String[] {"x"}, new int[2][2]};
    }

    static int inner() {
        class Local {
            int[] data = new int[5];
        }
        return new Local().data.length + new Square().coords().length;
    }

    static int exceptions(int n) {
        int c = 0;
        for (int i = 0; i < n; i++) {
            try {
                if (i % 2 == 0) {
                    throw new IllegalStateException();
                }
                c += new int[1].length;
            } catch (IllegalStateException e) {
                c += new int[2].length;
            } finally {
                sink++;
            }
        }
        return c;
    }

    static int negative() {
        try {
            return new int[-1].length;
        } catch (NegativeArraySizeException e) {
            return -1;
        }
    }

    static long mixed(long a, double d, int n) {
        long[] la = new long[n];
        double[][] dd = new double[n][];
        for (int i = 0; i < n; i++) {
            la[i] = a + i;
            dd[i] = i % 2 == 0 ? new double[] {d} : null;
        }
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += la[i] + (dd[i] == null ? 0 : (long) dd[i][0]);
        }
        return s;
    }

    static int notBytecode() {
        int[] a = {1, 2, 3};
        int[] b = a.clone();
        Object c = java.lang.reflect.Array.newInstance(int.class, 4);
        return b.length + java.lang.reflect.Array.getLength(c) + "abc".toCharArray().length;
    }

    public static void main(String[] args) throws Exception {
        CountingTracker.on = true;
        int b;
        b = arrays(); result("sumSquares", sumSquares(10)); count("sumSquares", b, 1);
        b = arrays(); result("joined", joined("a", "b", "c")); count("joined", b, 1);
        b = arrays(); result("lambdas", lambdas(4)); count("lambdas", b, 3);
        b = arrays(); result("sync", sync(new Object(), 3)); count("sync", b, 1);
        b = arrays(); result("tryResources", tryResources()); count("tryResources", b, 2);
        b = arrays(); result("nestedInit", nestedInit().length); count("nestedInit", b, 4);
        b = arrays(); result("inner", inner()); count("inner", b, 2);
        b = arrays(); result("exceptions", exceptions(5)); count("exceptions", b, 5);
        b = arrays(); result("negative", negative()); count("negative", b, 0);
        b = arrays(); result("mixed", mixed(10, 2.5, 5)); count("mixed", b, 2 + 3);
        b = arrays(); result("notBytecode", notBytecode()); count("notBytecode", b, 1);
        int[] mine = new int[3];
        System.out.println("count last-is-the-array " + (CountingTracker.last == mine ? 1 : 0) + " 1");
        CountingTracker.on = false;
        b = arrays(); result("off", sumSquares(3) + lambdas(1)); count("off", b, 0);
        result("table", table.length + " " + sink);
    }
}
