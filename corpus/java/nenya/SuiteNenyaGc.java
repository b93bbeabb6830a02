import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;

import com.threerings.util.unsafe.Unsafe;

/**
 * A game's latency-critical section with nenya's Unsafe: collections counted by the GC MXBeans
 * over an allocation loop (96 MB of short-lived arrays) with the GC disabled, then the same loop
 * with it enabled again.
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

    static long churn() {
        long before = collections();
        for (int i = 0; i < 96 * 256; i++) {
            sink = new byte[4096];
        }
        return collections() - before;
    }

    public static void main(String[] args) throws Exception {
        System.gc();
        Unsafe.setGCEnabled(false);
        long disabled = churn();
        Unsafe.setGCEnabled(true);
        long enabled = churn();
        java.lang.reflect.Field init = Unsafe.class.getDeclaredField("_initialized");
        init.setAccessible(true);
        System.out.println("EXPECT initialized=" + init.get(null));
        System.out.println("EXPECT gc_disabled=" + disabled);
        System.out.println("EXPECT gc_enabled=" + enabled);
        System.out.println("NENYA-DONE");
    }
}
