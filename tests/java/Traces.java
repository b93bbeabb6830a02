// GetCallTrace: the frames and lines JVMPI reports against the JVM's own StackTraceElements.
public class Traces {
    static void c() {
        String jvmpi = Probe.callTrace(0, 10); StackTraceElement[] st = new Throwable().getStackTrace();
        System.out.println("JVMPI " + jvmpi);
        StringBuilder sb = new StringBuilder();
        for (StackTraceElement e : st) {
            if (sb.length() > 0) sb.append(';');
            sb.append(e.getClassName()).append('.').append(e.getMethodName()).append(':').append(e.getLineNumber());
        }
        System.out.println("JAVA " + sb);
    }

    static void b() {
        c();
    }

    void a() {
        b();
    }

    public static void main(String[] args) throws Exception {
        new Traces().a();
        // Another thread's trace, taken while it sleeps.
        final long[] env = new long[1];
        Thread t = new Thread(() -> {
            env[0] = Probe.threadEnv();
            sleeper();
        }, "sleeper");
        t.start();
        // Until it sleeps (CONDVAR_WAIT), at most 10 s.
        for (int i = 0; i < 1000 && (env[0] == 0 || Probe.status(env[0]) != 3); i++) Probe.sleep(10);
        System.out.println("OTHER " + Probe.callTrace(env[0], 10));
        t.interrupt();
        t.join();
    }

    static void sleeper() {
        try {
            Thread.sleep(10_000); //@sleep-line
        } catch (InterruptedException e) {
            // done
        }
    }
}
