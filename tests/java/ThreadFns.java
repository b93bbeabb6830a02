// The JVMPI thread functions, checked from Java: prints OK/FAIL lines.
public class ThreadFns {
    static volatile boolean stop;
    static volatile long sink;
    static final Object lock = new Object();

    static Thread start(String name, Runnable r, long[] env) throws Exception {
        Thread t = new Thread(() -> {
            env[0] = Probe.threadEnv();
            r.run();
        }, name);
        t.setDaemon(true);
        t.start();
        while (env[0] == 0) Thread.sleep(5);
        Thread.sleep(50);
        return t;
    }

    public static void main(String[] args) throws Exception {
        long[] spinEnv = new long[1], waitEnv = new long[1], blockEnv = new long[1], sleepEnv = new long[1];
        Thread spinner = start("spinner", () -> { while (!stop) sink++; }, spinEnv);
        Thread waiter = start("waiter", () -> {
            synchronized (lock) {
                try { lock.wait(); } catch (InterruptedException e) { /* end */ }
            }
        }, waitEnv);
        Thread sleeper = start("sleeper", () -> Probe.sleep(60_000), sleepEnv);
        Thread blocked;
        synchronized (lock) {
            blocked = start("blocked", () -> { synchronized (lock) { sink++; } }, blockEnv);
            Thread.sleep(100);
            int st = Probe.status(blockEnv[0]);
            Probe.check(st == 2, "status-monitor-wait", st);
        }
        blocked.join();
        int st = Probe.status(spinEnv[0]);
        Probe.check(st == 1, "status-runnable", st);
        st = Probe.status(waitEnv[0]);
        Probe.check(st == 3, "status-condvar-wait", st);
        st = Probe.status(sleepEnv[0]);
        Probe.check(st == 3, "status-sleeping-is-condvar", st);
        spinner.interrupt();
        Thread.sleep(20);
        st = Probe.status(spinEnv[0]);
        Probe.check(st == (1 | 0x4000), "status-interrupted-bit", st);

        // Suspend/resume: a suspended spinner makes no progress; status unchanged by JVMPI suspend.
        Probe.suspend(spinEnv[0]);
        long s1 = sink;
        Thread.sleep(100);
        long s2 = sink;
        st = Probe.status(spinEnv[0]);
        Probe.resume(spinEnv[0]);
        Thread.sleep(50);
        Probe.check(s1 == s2, "suspend-stops-thread", s1 + " vs " + s2);
        Probe.check(sink != s2, "resume-restarts-thread", sink);
        Probe.check((st & 0x8000) == 0, "jvmpi-suspend-not-in-status", st);

        // ThreadHasRun: the paper's sampling loop.
        Probe.suspend(spinEnv[0]);
        Probe.resume(spinEnv[0]);
        Thread.sleep(50);
        Probe.suspend(spinEnv[0]);
        boolean spinRan = Probe.hasRun(spinEnv[0]);
        Probe.resume(spinEnv[0]);
        Probe.suspend(waitEnv[0]);
        Probe.resume(waitEnv[0]);
        Thread.sleep(50);
        Probe.suspend(waitEnv[0]);
        boolean waitRan = Probe.hasRun(waitEnv[0]);
        Probe.resume(waitEnv[0]);
        Probe.check(spinRan, "hasrun-busy-thread", spinRan);
        Probe.check(!waitRan, "hasrun-blocked-thread", waitRan);

        // Lists.
        int[] r = Probe.threadList(new long[] {spinEnv[0], sleepEnv[0], 0x7777}, true);
        long s3 = sink;
        Thread.sleep(50);
        long s4 = sink;
        int[] r2 = Probe.threadList(new long[] {spinEnv[0], sleepEnv[0], 0x7777}, false);
        Probe.check(r[0] == 0 && r[1] == 0 && r[2] == -1, "suspend-list-results", java.util.Arrays.toString(r));
        Probe.check(r2[0] == 0 && r2[1] == 0 && r2[2] == -1, "resume-list-results", java.util.Arrays.toString(r2));
        Probe.check(s3 == s4, "suspend-list-stops-thread", s3 + " vs " + s4);

        // Thread-local storage: per thread, pointer-sized.
        Probe.setTls(spinEnv[0], 0x1234_5678_9abcL);
        Probe.setTls(waitEnv[0], 42);
        Probe.check(Probe.getTls(spinEnv[0]) == 0x1234_5678_9abcL && Probe.getTls(waitEnv[0]) == 42, "tls",
                Probe.getTls(spinEnv[0]) + "/" + Probe.getTls(waitEnv[0]));
        Probe.check(Probe.getTls(sleepEnv[0]) == 0, "tls-default-null", Probe.getTls(sleepEnv[0]));

        // GetThreadObject.
        Object o = Probe.objectFor(Probe.threadObjectId(spinEnv[0]));
        Probe.check(o == spinner, "thread-object", o);
        Object me = Probe.objectFor(Probe.threadObjectId(Probe.threadEnv()));
        Probe.check(me == Thread.currentThread(), "thread-object-self", me);

        // CPU time of the current thread grows with work, in nanoseconds.
        long c1 = Probe.cpuTime();
        long x = 0;
        for (int i = 0; i < 20_000_000; i++) x += i ^ (x >>> 3);
        long c2 = Probe.cpuTime();
        sink += x;
        Probe.check(c1 > 0 && c2 - c1 > 1_000_000 && c2 - c1 < 10_000_000_000L, "cpu-time-ns", c1 + " -> " + c2);

        stop = true;
        spinner.join();
        waiter.interrupt();
        sleeper.interrupt();
        System.out.println("done");
    }
}
