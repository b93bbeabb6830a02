import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;

import com.threerings.util.unsafe.Unsafe;

/**
 * A game's latency-critical sections with nenya's Unsafe, collections counted by the GC MXBeans:
 * <ol>
 * <li>a frame: 8 MB of short-lived arrays with the GC disabled (it fits the young generation);</li>
 * <li>an overflow: 96 MB with the GC disabled, three times the young generation (HotSpot 1.5 grew
 * the heap; so do Serial and Parallel up to JDK 23, while JDK 24+ makes the allocating thread wait
 * for the critical section to end, which the shim gives up after {@code disable-gc-max=});</li>
 * <li>the same 96 MB with the GC enabled again.</li>
 * </ol>
 */
public final class SuiteNenyaGc {
    static volatile Object sink;

    private SuiteNenyaGc() {
    }

    static long collections() {
        long n = 0;
        for (GarbageCollectorMXBean b : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, b.getCollectionCount());
        }
        return n;
    }

    static long churn(int megabytes) {
        long before = collections();
        for (int i = 0; i < megabytes * 256; i++) {
            sink = new byte[4096];
        }
        return collections() - before;
    }

    public static void main(String[] args) throws Exception {
        System.gc();
        Unsafe.setGCEnabled(false);
        long frame = churn(8);
        Unsafe.setGCEnabled(true);
        System.gc();
        long t0 = System.nanoTime();
        Unsafe.setGCEnabled(false);
        long overflow = churn(96);
        Unsafe.setGCEnabled(true);
        long overflowMs = (System.nanoTime() - t0) / 1_000_000;
        long enabled = churn(96);
        java.lang.reflect.Field init = Unsafe.class.getDeclaredField("_initialized");
        init.setAccessible(true);
        System.out.println("EXPECT initialized=" + init.get(null));
        System.out.println("EXPECT java=" + System.getProperty("java.specification.version"));
        System.out.println("EXPECT gc_frame=" + frame);
        System.out.println("EXPECT gc_overflow=" + overflow);
        System.out.println("EXPECT overflow_ms=" + overflowMs);
        System.out.println("EXPECT gc_enabled=" + enabled);
        System.out.println("NENYA-DONE");
    }
}
