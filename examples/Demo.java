import java.util.Random;

/**
 * Workload for the example agent (examples/legacy_hprof_lite.c): two worker threads burn CPU in
 * distinct methods (counting primes, shell-sorting arrays) for about 1.5 s while the main thread
 * requests two garbage collections. A sampling profiler should rank {@code Demo.isPrime} and
 * {@code Demo.shellSort} at the top.
 */
public class Demo {
    private static final long RUN_MILLIS = 1500;

    public static void main(String[] args) throws InterruptedException {
        final long deadline = System.currentTimeMillis() + RUN_MILLIS;

        Thread primes = new Thread(new Runnable() {
            public void run() {
                long found = 0;
                int from = 2;
                while (System.currentTimeMillis() < deadline) {
                    found += countPrimes(from, from + 20000);
                    from += 20000;
                }
                System.out.println("primes worker: " + found + " primes below " + from);
            }
        }, "primes-worker");

        Thread sorter = new Thread(new Runnable() {
            public void run() {
                Random random = new Random(42);
                long checksum = 0;
                int rounds = 0;
                while (System.currentTimeMillis() < deadline) {
                    checksum += sortRandomArray(random, 50000);
                    rounds++;
                }
                System.out.println("sort worker: " + rounds + " arrays, checksum " + checksum);
            }
        }, "sort-worker");

        primes.start();
        sorter.start();

        Thread.sleep(RUN_MILLIS / 3);
        System.gc();
        Thread.sleep(RUN_MILLIS / 3);
        System.gc();

        primes.join();
        sorter.join();
        System.out.println("done");
    }

    static int countPrimes(int from, int to) {
        int count = 0;
        for (int n = from; n < to; n++) {
            if (isPrime(n)) {
                count++;
            }
        }
        return count;
    }

    static boolean isPrime(int n) {
        if (n < 2) {
            return false;
        }
        for (int d = 2; (long) d * d <= n; d++) {
            if (n % d == 0) {
                return false;
            }
        }
        return true;
    }

    static long sortRandomArray(Random random, int size) {
        int[] values = new int[size];
        for (int i = 0; i < size; i++) {
            values[i] = random.nextInt();
        }
        shellSort(values);
        return values[size / 2];
    }

    static void shellSort(int[] a) {
        for (int gap = a.length / 2; gap > 0; gap /= 2) {
            for (int i = gap; i < a.length; i++) {
                int v = a[i];
                int j = i;
                while (j >= gap && a[j - gap] > v) {
                    a[j] = a[j - gap];
                    j -= gap;
                }
                a[j] = v;
            }
        }
    }
}
