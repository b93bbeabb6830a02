// Virtual-thread churn for scripts/bench-vthreads.sh: starts N virtual threads over its life
// (default 1 000 000), at most ALIVE at once (default 5000), each parking once (Thread.yield)
// in the middle of a small method, then prints the wall time of the churn and, after a full
// collection, the process's RSS and peak RSS. Started through reflection so that it compiles
// for Java 11.
//   java VtChurn [N] [ALIVE]
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;

public class VtChurn {
    static final AtomicLong SUM = new AtomicLong();

    static void work(int i) {
        long a = i * 31L;
        Thread.yield();
        SUM.addAndGet(a + 1);
    }

    static long status(String key) throws Exception {
        for (String l : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (l.startsWith(key)) return Long.parseLong(l.replaceAll("[^0-9]", ""));
        }
        return -1;
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        int alive = args.length > 1 ? Integer.parseInt(args[1]) : 5000;
        Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        Method start = Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class);
        Semaphore slots = new Semaphore(alive);
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            slots.acquire();
            final int k = i;
            start.invoke(builder, (Runnable) () -> {
                try {
                    work(k);
                } finally {
                    slots.release();
                }
            });
        }
        slots.acquire(alive);
        long ns = System.nanoTime() - t0;
        System.gc();
        System.out.printf("VTCHURN n=%d ms=%d ns_per_thread=%d rss_kb=%d hwm_kb=%d sum=%d%n", n, ns / 1_000_000, ns / n,
                status("VmRSS:"), status("VmHWM:"), SUM.get());
    }
}
