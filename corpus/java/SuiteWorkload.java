// The real-agent suite's workload: small, deterministic where the checks need it, and
// self-describing. It ends by printing "EXPECT key=value" lines (counts, source lines found at
// run time, thread names, the hot method and how often it ran); the checkers take every
// expected number from the run without an agent, or, for the call count, from the run itself.
//
// Written for javac --release 11 -g -Xjcov with no invokedynamic (no lambdas, no string
// concatenation): JCOV's class-file parser predates the constant-pool kinds those need.
public class SuiteWorkload {
    static final int NODES = 100000;      // SuiteNode objects, all allocated in makeNodes()
    static final int KEEP = 5;            // every 5th SuiteNode stays reachable to the end
    static final int ITEMS = 2000;        // SuiteItem objects per worker, in makeItem()
    static final int ROUNDS = 200;        // synchronized (GUARD) rounds per worker
    static final long HOT_MILLIS = 1500;  // wall time spent calling spin()
    static final SuiteLock GUARD = new SuiteLock();
    static final Object BELL = new Object();
    static final Object[] kept = new Object[NODES / KEEP];   // Object[]: no SuiteNode[] allocation
    static int keptCount, nodeLine, keepLine, itemLine;
    static boolean rung;
    static long rounds, spins;
    static volatile long sink;
    static volatile Object last;

    /** the source line of the caller's call to line() */
    static int line() {
        return new Throwable().getStackTrace()[1].getLineNumber();
    }

    static void makeNodes() {
        int k = 0;
        for (int i = 0; i < NODES; i++) {
            SuiteNode n = new SuiteNode(i); if (i == 0) nodeLine = line();
            if (i % KEEP == 0) { kept[k++] = n; if (k == 1) keepLine = line(); }
        }
        keptCount = k;
    }

    static void makeItem(int i) {
        last = new SuiteItem(i); if (i == 0 && itemLine == 0) itemLine = line();
    }

    static long spin(int n) {
        long s = 7;
        for (int i = 0; i < n; i++) {
            s = s * 31 + (i ^ (s >>> 7));
        }
        return s;
    }

    static void hot() {
        long until = System.currentTimeMillis() + HOT_MILLIS;
        long acc = 0;
        while (true) {
            acc += spin(50000);
            spins++;
            if (System.currentTimeMillis() >= until) break;
        }
        sink = acc;
    }

    static final class Worker extends Thread {
        private final Thread before;   // the thread that must end first

        Worker(String name, Thread before) {
            super(name);
            this.before = before;
        }

        @Override
        public void run() {
            for (int i = 0; i < ITEMS; i++) makeItem(i);
            for (int r = 0; r < ROUNDS; r++) {
                synchronized (GUARD) {
                    rounds++;
                    long s = 0;
                    for (int j = 0; j < 20000; j++) s += j ^ r;
                    sink = s;
                }
            }
            // NiagaraST writes a thread's profile at THREAD_END without a lock: the workers end
            // one after the other, never together.
            if (before != null) {
                try {
                    before.join();
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    static final class Sleeper extends Thread {
        Sleeper() {
            super("Waiter");
        }

        @Override
        public void run() {
            synchronized (BELL) {
                while (!rung) {
                    try {
                        BELL.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        }
    }

    static void expect(String key, Object value) {
        System.out.print("EXPECT ");
        System.out.print(key);
        System.out.print("=");
        System.out.println(String.valueOf(value));
    }

    public static void main(String[] args) throws Exception {
        makeNodes();
        System.gc();
        Worker one = new Worker("Worker-1", null);
        Worker two = new Worker("Worker-2", one);
        synchronized (GUARD) {   // both workers block on GUARD: contention for the monitor tools
            one.start();
            Thread.sleep(50);     // one THREAD_START at a time (NiagaraST numbers threads unlocked)
            two.start();
            Thread.sleep(300);
        }
        one.join();
        two.join();
        Sleeper waiter = new Sleeper();
        waiter.start();
        Thread.sleep(200);
        synchronized (BELL) {
            rung = true;
            BELL.notifyAll();
        }
        waiter.join();
        Thread.sleep(100);
        System.out.println("PHASE hot");   // every thread has come and gone: a tool may be signalled now
        System.out.flush();
        hot();
        System.gc();
        expect("alloc_class", "SuiteNode");
        expect("alloc_count", Integer.valueOf(NODES));
        expect("live_count", Integer.valueOf(keptCount));
        expect("alloc_method", "SuiteWorkload.makeNodes");
        expect("alloc_line", Integer.valueOf(nodeLine));
        expect("keep_line", Integer.valueOf(keepLine));
        expect("worker_class", "SuiteItem");
        expect("worker_items", Integer.valueOf(ITEMS));
        expect("worker_method", "SuiteWorkload.makeItem");
        expect("worker_line", Integer.valueOf(itemLine));
        expect("threads", "Worker-1,Worker-2,Waiter");
        expect("workers", "Worker-1,Worker-2");
        expect("hot_class", "SuiteWorkload");
        expect("hot_method", "spin");
        expect("hot_sig", "(I)J");
        expect("spin_calls", Long.valueOf(spins));
        expect("lock_class", "SuiteLock");
        expect("rounds", Long.valueOf(rounds));
        expect("rounds_want", Integer.valueOf(2 * ROUNDS));
        System.out.println("WORKLOAD-DONE");
    }
}

final class SuiteNode {
    final int value;
    SuiteNode next;

    SuiteNode(int value) {
        this.value = value;
    }
}

final class SuiteItem {
    final int id;
    final long weight;

    SuiteItem(int id) {
        this.id = id;
        this.weight = id * 17L;
    }
}

final class SuiteLock {
    int unused;
}
