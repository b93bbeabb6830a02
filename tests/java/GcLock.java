// Threads that take the agent's GC lock while collections run: must not deadlock.
public class GcLock {
    public static void main(String[] args) throws Exception {
        Thread[] ts = new Thread[3];
        for (int i = 0; i < ts.length; i++) {
            ts[i] = new Thread(() -> {
                for (int k = 0; k < 2000; k++) {
                    Probe.gcLockTouch();
                    byte[] junk = new byte[4096];
                    if (junk.length == 0) System.out.println();
                }
            }, "toucher-" + i);
            ts[i].start();
        }
        for (int i = 0; i < 10; i++) {
            System.gc();
            Probe.runGC();
        }
        for (Thread t : ts) t.join();
        Probe.sleep(300);
        System.out.println("done");
    }
}
