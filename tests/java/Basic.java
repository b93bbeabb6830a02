// The foundation scenario: app threads, app classes, System.gc(), a clean exit.
public class Basic {
    public static void main(String[] args) throws Exception {
        Probe.mark("main-start");
        Thread[] ts = new Thread[2];
        for (int i = 0; i < ts.length; i++) {
            ts[i] = new Thread(() -> {
                double s = 0;
                for (int k = 0; k < 10; k++) s += new Circle(k).area();
                Probe.mark("worker " + Thread.currentThread().getName() + " " + (s > 0));
            }, "worker-" + (i + 1));
            ts[i].start();
        }
        for (Thread t : ts) t.join();
        Probe.mark("before-gc");
        System.gc();
        Probe.sleep(800); // the GC events come from the shim's thread, after the collection
        Probe.mark("after-gc");
        System.out.println("done");
    }
}
