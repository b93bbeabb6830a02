// The stress program of tests/reliability.rs and scripts/stress.sh: worker threads that allocate
// and contend for monitors, a stream of short-lived threads, classes defined and dropped by
// throw-away class loaders, and regular collections, for a given time; then it ends as asked.
//
// Arguments, key=value: ms=<run time> workers=<n> short=<max short threads, -1 unlimited>
// inflight=<short threads at once> churn=0|1 gc=<ms between System.gc(), 0 none>
// min=1: after `ms`, go on until at least 60 short threads, 3 churned classes and 3 collections
// blocks=<n>: n times, one thread holds a monitor for 30 ms while another is blocked on it (a
//   contention no spinning resolves: JVMTI MonitorContendedEnter is certain, whatever the load)
// end=normal|exit|halt|gc-exit|wait delay=<ms, gc-exit> cap=<ms, wait>
//   normal   stop everything, join, return from main (DestroyJavaVM)
//   exit     System.exit(3) with everything still running
//   halt     Runtime.halt(4) with everything still running
//   gc-exit  System.gc(), then System.exit(5) `delay` ms later (inside the agent's GC bracket
//            when the agent keeps brackets open that long)
//   wait     keep running until something else (the agent's ProfilerExit) ends the JVM;
//            System.exit(99) after `cap` ms
//   hook-gc  System.exit(6), with a shutdown hook that runs System.gc() and then takes `delay`
//            ms: a collection (and the agent's GC bracket) while the JVM is already exiting
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

public class Stress {
    static volatile boolean stop;
    static final AtomicLong allocs = new AtomicLong();
    static final AtomicLong shortThreads = new AtomicLong();
    static final AtomicLong classes = new AtomicLong();
    static final AtomicLong gcs = new AtomicLong();
    static final AtomicLong blocked = new AtomicLong();
    static final Object[] locks = {new Object(), new Object(), new Object()};
    static long contended;

    static final class Node {
        final int value;
        final Node next;

        Node(int value, Node next) {
            this.value = value;
            this.next = next;
        }
    }

    static final class Loader extends ClassLoader {
        Loader() {
            super(null);
        }

        Class<?> define(byte[] b) {
            return defineClass("StressChurn", b, 0, b.length);
        }
    }

    static Map<String, String> opts;

    static long opt(String k, long def) {
        String v = opts.get(k);
        return v == null ? def : Long.parseLong(v);
    }

    /** Allocates a little of everything; returns something to keep. */
    static Object churnHeap(int i, Node keep) {
        Object o;
        switch (i & 7) {
            case 0: o = new Node(i, keep); break;
            case 1: o = new int[1 + (i & 63)]; break;
            case 2: o = new byte[64 + (i & 1023)]; break;
            case 3: o = "s" + i; break;
            case 4: o = new Object[2][3]; break;
            case 5: o = new ArrayList<Integer>(4); ((List<Integer>) o).add(i); break;
            case 6: o = new long[8]; break;
            default: o = new StringBuilder().append(i).append('x'); break;
        }
        allocs.incrementAndGet();
        return o;
    }

    static void worker(int id) {
        Object[] ring = new Object[2048];
        Node chain = null;
        int i = 0;
        while (!stop) {
            Object o = churnHeap(i, chain);
            if (o instanceof Node) chain = (i & 1023) == 0 ? null : (Node) o;
            ring[i & (ring.length - 1)] = o;
            if ((i & 63) == 0) {
                Object lock = locks[(i >> 6) % locks.length];
                synchronized (lock) {
                    contended++;
                    if ((i & 4095) == 0) {
                        try {
                            lock.wait(1);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                    lock.notifyAll();
                }
            }
            if ((i & 255) == 0) Thread.yield();
            i++;
        }
    }

    static void spawner(long max, int inflight) throws InterruptedException {
        List<Thread> running = new ArrayList<>();
        while (!stop && (max < 0 || shortThreads.get() < max)) {
            final long n = shortThreads.incrementAndGet();
            Thread t = new Thread(() -> {
                Node keep = null;
                for (int k = 0; k < 32; k++) {
                    Object o = churnHeap(k, keep);
                    if (o instanceof Node) keep = (Node) o;
                }
            }, "short-" + n);
            t.start();
            running.add(t);
            if (running.size() >= inflight) running.remove(0).join();
        }
        for (Thread t : running) t.join();
    }

    static void churner() throws Exception {
        byte[] bytes;
        try (InputStream in = Stress.class.getResourceAsStream("/StressChurn.class")) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[4096];
            for (int n; (n = in.read(buf)) > 0; ) out.write(buf, 0, n);
            bytes = out.toByteArray();
        }
        while (!stop) {
            Class<?> k = new Loader().define(bytes);
            ((Runnable) k.getDeclaredConstructor().newInstance()).run();
            classes.incrementAndGet();
            Thread.sleep(2);
        }
    }

    /** A contention no spinning resolves: the holder keeps the monitor 30 ms after the other thread asked for it. */
    static void blocker(long n) throws InterruptedException {
        final Object lock = new Object();
        for (long k = 0; k < n && !stop; k++) {
            final Thread[] waiter = new Thread[1];
            synchronized (lock) {
                waiter[0] = start("blocked-" + k, () -> {
                    synchronized (lock) {
                        blocked.incrementAndGet();
                    }
                });
                while (waiter[0].getState() != Thread.State.BLOCKED && waiter[0].isAlive()) Thread.sleep(1);
                Thread.sleep(30);
            }
            waiter[0].join();
        }
    }

    static void collector(long every) throws InterruptedException {
        while (!stop) {
            Thread.sleep(every);
            System.gc();
            gcs.incrementAndGet();
        }
    }

    static Thread start(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    interface Body {
        void run() throws Exception;
    }

    static Runnable loop(Body b) {
        return () -> {
            try {
                b.run();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        };
    }

    static void summary(String end) {
        System.out.println("STRESS end=" + end + " allocs=" + allocs.get() + " short=" + shortThreads.get()
                + " classes=" + classes.get() + " gcs=" + gcs.get() + " contended=" + contended + " blocked=" + blocked.get());
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        opts = new HashMap<>();
        for (String a : args) {
            int eq = a.indexOf('=');
            opts.put(a.substring(0, eq), a.substring(eq + 1));
        }
        String end = opts.getOrDefault("end", "normal");
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < opt("workers", 4); w++) {
            final int id = w;
            threads.add(start("worker-" + w, () -> worker(id)));
        }
        final long max = opt("short", -1);
        final int inflight = (int) opt("inflight", 16);
        threads.add(start("spawner", loop(() -> spawner(max, inflight))));
        if (opt("churn", 1) != 0) threads.add(start("churner", loop(Stress::churner)));
        final long gc = opt("gc", 250);
        if (gc > 0) threads.add(start("collector", loop(() -> collector(gc))));
        final long blocks = opt("blocks", 0);
        if (blocks > 0) threads.add(start("blocker", loop(() -> blocker(blocks))));
        Thread.sleep(opt("ms", 3000));
        if (opt("min", 0) != 0) {
            // On a loaded machine the timed phase may do little: it goes on (20 s at most) until
            // the program's part of the figures a test asks for is there, and a last collection
            // lets the dropped loaders' classes unload.
            long cap = System.nanoTime() + 20_000_000_000L;
            while ((shortThreads.get() < 60 || classes.get() < 3 || gcs.get() < 3) && System.nanoTime() < cap) {
                Thread.sleep(20);
            }
            System.gc();
        }
        switch (end) {
            case "normal":
                stop = true;
                for (Thread t : threads) t.join();
                summary(end);
                return;
            case "exit":
                summary(end);
                System.exit(3);
                break;
            case "halt":
                summary(end);
                Runtime.getRuntime().halt(4);
                break;
            case "gc-exit":
                summary(end);
                System.gc();
                Thread.sleep(opt("delay", 50));
                System.exit(5);
                break;
            case "hook-gc":
                final long delay = opt("delay", 300);
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    System.gc();
                    try {
                        Thread.sleep(delay);
                    } catch (InterruptedException e) {
                        // exiting anyway
                    }
                }, "stress-hook"));
                summary(end);
                System.exit(6);
                break;
            case "wait":
                Thread.sleep(opt("cap", 30000));
                summary("not-ended");
                System.exit(99);
                break;
            default:
                throw new IllegalArgumentException(end);
        }
    }
}
