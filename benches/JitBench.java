// CPU-bound work for scripts/bench-jit.sh. "cpu": a mix of small methods the JIT compiles,
// inlines and recompiles (tiered), over a fixed number of rounds; "contend": two threads take
// turns on one lock (every entry contended half the time) plus short timed waits.
import java.util.Arrays;

public class JitBench {
    static int collatz(long n) {
        int steps = 0;
        while (n != 1) {
            n = (n & 1) == 0 ? n >> 1 : 3 * n + 1;
            steps++;
        }
        return steps;
    }

    static double poly(double x) {
        return ((3.0 * x - 2.0) * x + 1.5) * x - 0.25;
    }

    static long sieve(int n) {
        boolean[] composite = new boolean[n + 1];
        long sum = 0;
        for (int i = 2; i <= n; i++) {
            if (!composite[i]) {
                sum += i;
                for (long j = (long) i * i; j <= n; j += i) composite[(int) j] = true;
            }
        }
        return sum;
    }

    static int[] sortCopy(int[] a) {
        int[] b = Arrays.copyOf(a, a.length);
        Arrays.sort(b);
        return b;
    }

    static long cpu(int rounds) {
        long acc = 0;
        int[] data = new int[4096];
        for (int r = 0; r < rounds; r++) {
            for (int i = 1; i < 2000; i++) acc += collatz(i + r);
            double d = 0;
            for (int i = 0; i < 20000; i++) d += poly(i * 1e-4);
            acc += (long) d + sieve(20000);
            for (int i = 0; i < data.length; i++) data[i] = (int) (acc * 31 + i * 17) ^ r;
            acc += sortCopy(data)[data.length / 2];
        }
        return acc;
    }

    static final Object LOCK = new Object();
    static long counter;

    static long contend(int n) throws InterruptedException {
        Runnable body = () -> {
            for (int i = 0; i < n; i++) {
                synchronized (LOCK) {
                    counter++;
                    if (i % 1000 == 0) {
                        try {
                            LOCK.wait(1);
                        } catch (InterruptedException e) {
                            throw new RuntimeException(e);
                        }
                    }
                }
            }
        };
        Thread a = new Thread(body), b = new Thread(body);
        a.start();
        b.start();
        a.join();
        b.join();
        return counter;
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int n = Integer.parseInt(args[1]);
        long t0 = System.nanoTime();
        long r = mode.equals("cpu") ? cpu(n) : contend(n);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.println("loop_ms=" + ms + " result=" + r);
    }
}
