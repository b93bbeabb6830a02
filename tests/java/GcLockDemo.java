import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.concurrent.CountDownLatch;

/**
 * DisableGC / EnableGC from Java (tests/agents/gclock.c, a library that takes JVMPI at run
 * time), counted with the GC MXBeans. Args: <library path> <mode> <MB>.
 *  hold:  main calls DisableGC; thread "allocator" allocates <MB> (more than the young
 *         generation holds) while main watches the collection count until one happens, the
 *         allocator is done, or it has waited 1.5 s for memory (10 s at most); then thread
 *         "enabler" calls EnableGC and the allocator finishes. Prints "held=<collections in the
 *         1.5 s> after=<collections after EnableGC> left=<MB the allocator still had to do at
 *         EnableGC>".
 *  stall: main calls DisableGC, allocates <MB> itself (more than the heap), then EnableGC:
 *         it must end all the same (the shim gives up at disable-gc-max). Prints "stall-done".
 */
public class GcLockDemo {
    static native int disableGC();

    static native int enableGC();

    static volatile Object sink;
    static volatile long left;

    static GarbageCollectorMXBean[] beans;

    /** Allocates nothing: while collections are held off, an allocation may wait for EnableGC. */
    static long collections() {
        long n = 0;
        for (int i = 0; i < beans.length; i++) {
            n += Math.max(0, beans[i].getCollectionCount());
        }
        return n;
    }

    static void allocate(long mb) {
        left = mb;
        for (long i = 0; i < mb * 16; i++) {
            sink = new byte[64 * 1024 - 16];
            if (i % 16 == 15) {
                left--;
            }
        }
    }

    static void await(CountDownLatch l) {
        try {
            l.await();
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        String mode = args[1];
        long mb = Long.parseLong(args[2]);
        beans = ManagementFactory.getGarbageCollectorMXBeans().toArray(new GarbageCollectorMXBean[0]);
        allocate(8);
        collections();
        System.gc();
        if (mode.equals("stall")) {
            disableGC();
            allocate(mb);
            enableGC();
            System.out.println("stall-done");
            return;
        }
        // Both threads exist before DisableGC: making a thread allocates, and an allocation may
        // wait for EnableGC while collections are held off (as with HotSpot's GC locker).
        CountDownLatch go = new CountDownLatch(1), stop = new CountDownLatch(1);
        Thread allocator = new Thread(() -> {
            await(go);
            allocate(mb);
        }, "allocator");
        Thread enabler = new Thread(() -> {
            await(stop);
            enableGC();
        }, "enabler");
        allocator.start();
        enabler.start();
        long c0 = collections();
        if (disableGC() != 0) {
            System.out.println("no JVMPI");
            return;
        }
        left = mb;
        go.countDown();
        // Until a collection happens, the allocator is done, or it has made no progress for 1.5 s
        // (it waits for memory): at most 10 s. Nothing here allocates.
        long last = -1, still = System.nanoTime(), end = still + 10_000_000_000L;
        while (collections() == c0 && left > 0 && System.nanoTime() < end) {
            Thread.sleep(50);
            long l = left, now = System.nanoTime();
            if (l != last) {
                last = l;
                still = now;
            } else if (now - still > 1_500_000_000L) {
                break;
            }
        }
        long c1 = collections();
        long leftAtEnable = left;
        stop.countDown();
        enabler.join();
        allocator.join();
        allocate(mb);
        long c2 = collections();
        System.out.println("held=" + (c1 - c0) + " after=" + (c2 - c1) + " left=" + leftAtEnable);
    }
}
