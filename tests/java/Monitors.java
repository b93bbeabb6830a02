// Raw monitors: contention events, wait/notify, quiet monitors, destroy.
public class Monitors {
    static volatile int step;

    public static void main(String[] args) throws Exception {
        long m = Probe.rawCreate("contended");
        long q = Probe.rawCreate("_quiet");
        for (long mon : new long[] {m, q}) {
            Thread holder = new Thread(() -> {
                Probe.rawEnter(mon);
                Probe.rawEnter(mon); // recursive
                step = 1;
                Probe.sleep(300);
                Probe.rawExit(mon);
                Probe.rawExit(mon);
            }, "holder");
            step = 0;
            holder.start();
            while (step == 0) Thread.sleep(1);
            Probe.mark("contending " + (mon == m ? "contended" : "_quiet"));
            Probe.rawEnter(mon);
            Probe.rawExit(mon);
            holder.join();
        }
        // Wait with timeout returns; NotifyAll wakes a waiter.
        long t0 = System.nanoTime();
        Probe.rawEnter(m);
        Probe.rawWait(m, 100);
        Probe.rawExit(m);
        long waited = (System.nanoTime() - t0) / 1_000_000;
        Probe.check(waited >= 90, "wait-timeout", waited);
        step = 0;
        Thread waiter = new Thread(() -> {
            Probe.rawEnter(m);
            step = 1;
            Probe.rawWait(m, 0);
            step = 2;
            Probe.rawExit(m);
        }, "waiter");
        waiter.start();
        while (step == 0) Thread.sleep(1);
        Probe.sleep(50);
        Probe.rawEnter(m);
        Probe.rawNotifyAll(m);
        Probe.rawExit(m);
        waiter.join(5000);
        Probe.check(step == 2 && !waiter.isAlive(), "notify-all", step);
        Probe.rawDestroy(m);
        Probe.rawDestroy(q);
        Probe.mark("destroyed");
        Probe.rawEnter(m); // stale: logged and ignored
        System.out.println("done");
    }
}
