import java.util.Random;

/**
 * Workload for the example agent (examples/legacy_hprof_lite.c). Two worker threads burn CPU in
 * distinct methods (counting primes, shell-sorting arrays) for about 1.5 s while the main thread
 * requests two garbage collections: a sampling profiler should rank {@code Demo.isPrime} and
 * {@code Demo.shellSort} at the top. A third thread allocates at a few recognisable sites, so
 * that with {@code heap=sites} the top allocation sites are lines of this file:
 * <ul>
 * <li>{@code new int[size]} in {@code sortRandomArray}, once per array the sort worker sorts;
 * <li>{@code new Node(i, head)} in the constructor {@code Chain(int, Node)}, reached through the
 *     chained constructor {@code Chain(int)}: 100 chains of 1000 nodes, of which the last 10
 *     chains are still reachable at the end;
 * <li>{@code new StringBuilder()}, its appends and {@code toString()} in {@code label}.
 * </ul>
 */
public class Demo {
    private static final long RUN_MILLIS = 1500;
    private static final int CHAINS = 100;
    private static final int CHAIN_LENGTH = 1000;
    private static final int CHAINS_KEPT = 10;

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

        Thread allocator = new Thread(new Runnable() {
            public void run() {
                Chain[] kept = new Chain[CHAINS_KEPT];
                long labelled = 0;
                for (int i = 0; i < CHAINS; i++) {
                    kept[i % CHAINS_KEPT] = new Chain(CHAIN_LENGTH);
                    labelled += label(i, kept[i % CHAINS_KEPT]).length();
                }
                long sum = 0;
                for (Chain chain : kept) {
                    sum += chain.sum();
                }
                System.out.println("alloc worker: " + CHAINS + " chains, " + labelled
                        + " label chars, sum of the kept chains " + sum);
            }
        }, "alloc-worker");

        primes.start();
        sorter.start();
        allocator.start();

        Thread.sleep(RUN_MILLIS / 3);
        System.gc();
        Thread.sleep(RUN_MILLIS / 3);
        System.gc();

        primes.join();
        sorter.join();
        allocator.join();
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

    /** A line describing a chain: its first 200 values, appended to a growing StringBuilder. */
    static String label(int number, Chain chain) {
        StringBuilder text = new StringBuilder();
        text.append("chain ").append(number).append(':');
        Node node = chain.head;
        for (int i = 0; i < 200 && node != null; i++, node = node.next) {
            text.append(' ').append(node.value);
        }
        return text.toString();
    }

    static final class Node {
        final int value;
        final Node next;

        Node(int value, Node next) {
            this.value = value;
            this.next = next;
        }
    }

    /** A linked list of nodes holding length-1 .. 0. */
    static final class Chain {
        final Node head;

        Chain(int length) {
            this(length, null);
        }

        Chain(int length, Node tail) {
            Node head = tail;
            for (int i = 0; i < length; i++) {
                head = new Node(i, head);
            }
            this.head = head;
        }

        long sum() {
            long sum = 0;
            for (Node node = head; node != null; node = node.next) {
                sum += node.value;
            }
            return sum;
        }
    }
}
