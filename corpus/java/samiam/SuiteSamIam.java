import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * SamIam's own self-test (edu.ucla.util.JVMProfiler.main), measured from outside with the
 * ThreadMXBean of the same thread.
 */
public final class SuiteSamIam {
    private SuiteSamIam() {
    }

    public static void main(String[] args) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long before = mx.getCurrentThreadCpuTime();
        edu.ucla.util.JVMProfiler.main(new String[0]);
        long after = mx.getCurrentThreadCpuTime();
        System.out.println("EXPECT mx_cpu_ns=" + (after - before));
        System.out.println("SAMIAM-DONE");
    }
}
