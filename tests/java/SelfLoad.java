import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * The application side of tests/agents/selfload.c: loads the agent's library again with
 * System.loadLibrary("selfload") (java.library.path names its directory) and calls its natives
 * from ordinary Java code. Prints "onload=<n> jni_onload=<n> again=<n>" and "cpu jvmpi=<ns> mxbean=<ns>"
 * for the same busy loop.
 */
public class SelfLoad {
    static native int onloadRan();

    static native int jniOnloadSawIt();

    static native long cpuTime();

    static native int getEnvAgain();

    static volatile long sink;

    public static void main(String[] args) {
        System.loadLibrary("selfload");
        System.out.println("onload=" + onloadRan() + " jni_onload=" + jniOnloadSawIt() + " again=" + getEnvAgain());
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long j0 = cpuTime(), m0 = mx.getCurrentThreadCpuTime();
        long x = 0;
        for (int round = 0; round < 40; round++) {
            for (int i = 0; i < 5_000_000; i++) {
                x += i ^ (x >>> 3);
            }
        }
        sink = x;
        long j1 = cpuTime(), m1 = mx.getCurrentThreadCpuTime();
        System.out.println("cpu jvmpi=" + (j1 - j0) + " mxbean=" + (m1 - m0));
    }
}
