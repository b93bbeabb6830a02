// Many virtual threads (JDK 21+; started through reflection so that the program compiles for
// Java 11), each parking in the middle of nested methods: Thread.sleep, contention on a
// ReentrantLock, a sleep pinned inside `synchronized`, an exception thrown from the deepest
// frame and caught two frames up. Prints one deterministic line per kind and a total, the same
// with or without an agent. Arguments: [tasks (default 20000)] [named virtual threads (default 4)].
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

public class VtTasks {
    static final ReentrantLock[] LOCKS = new ReentrantLock[4];
    static final Object[] MONITORS = new Object[4];
    static final AtomicLong[] BY_KIND = new AtomicLong[5];

    static {
        for (int i = 0; i < LOCKS.length; i++) LOCKS[i] = new ReentrantLock();
        for (int i = 0; i < MONITORS.length; i++) MONITORS[i] = new Object();
        for (int i = 0; i < BY_KIND.length; i++) BY_KIND[i] = new AtomicLong();
    }

    static long leaf(int i) {
        return i * 3L + 1;
    }

    static long sleepy(int i) throws InterruptedException {
        long a = leaf(i);
        Thread.sleep(1);
        return a + leaf(i + 1);
    }

    static long locked(int i) throws InterruptedException {
        ReentrantLock l = LOCKS[i % LOCKS.length];
        l.lock();
        try {
            long a = leaf(i);
            Thread.sleep(0, 200_000);
            return a + leaf(i + 2);
        } finally {
            l.unlock();
        }
    }

    static long pinned(int i) throws InterruptedException {
        synchronized (MONITORS[i % MONITORS.length]) {
            long a = leaf(i);
            Thread.sleep(0, 50_000);
            return a + leaf(i + 3);
        }
    }

    static long thrower(int i) throws InterruptedException {
        Thread.sleep(1);
        if (i >= 0) throw new IllegalStateException("task " + i);
        return 0;
    }

    static long catching(int i) throws InterruptedException {
        try {
            return deeper(i);
        } catch (IllegalStateException e) {
            return e.getMessage().length();
        }
    }

    static long deeper(int i) throws InterruptedException {
        return thrower(i) + 1;
    }

    static long recurse(int i, int depth) throws InterruptedException {
        if (depth == 0) return middle(i);
        return recurse(i, depth - 1) + 1;
    }

    static long middle(int i) throws InterruptedException {
        switch (i % 5) {
            case 0: return sleepy(i);
            case 1: return locked(i);
            case 2: return pinned(i);
            case 3: return catching(i);
            default: Thread.yield(); return leaf(i);
        }
    }

    static long task(int i) {
        try {
            long r = recurse(i, i % 7);
            BY_KIND[i % 5].addAndGet(r);
            return r;
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        int tasks = args.length > 0 ? Integer.parseInt(args[0]) : 20000;
        int named = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        Method m = java.util.concurrent.Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        long total = 0;
        ExecutorService ex = (ExecutorService) m.invoke(null);
        List<Future<Long>> fs = new ArrayList<>(tasks);
        for (int i = 0; i < tasks; i++) {
            final int n = i;
            fs.add(ex.submit(() -> task(n)));
        }
        for (Future<Long> f : fs) total += f.get();
        ex.shutdown();
        ex.awaitTermination(1, TimeUnit.MINUTES);
        // A few named virtual threads, started one by one.
        Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        Class<?> b = Class.forName("java.lang.Thread$Builder");
        Method name = b.getMethod("name", String.class);
        Method start = b.getMethod("start", Runnable.class);
        for (int i = 0; i < named; i++) {
            Object nb = name.invoke(builder, "named-vt-" + i);
            final int n = i;
            Thread t = (Thread) start.invoke(nb, (Runnable) () -> task(n));
            t.join();
        }
        for (int k = 0; k < BY_KIND.length; k++) System.out.println("kind " + k + " " + BY_KIND[k].get());
        System.out.println("tasks " + tasks + " total " + total);
    }
}
