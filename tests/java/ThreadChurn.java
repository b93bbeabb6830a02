// Threads started one after another, each ending while main holds its Thread object's lock, so
// that it contends for that lock after its THREAD_END and the next thread is likely to be given
// the ended one's JNIEnv. Each thread waits with a timeout that names it.
public class ThreadChurn {
    static final class ChurnLock {}
    static volatile boolean ready;

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args.length > 0 ? args[0] : "200");
        ChurnLock lock = new ChurnLock();
        for (int i = 0; i < n; i++) {
            final long timeout = 100000 + i;
            ready = false;
            Thread t = new Thread(() -> {
                synchronized (lock) {
                    ready = true;
                    try {
                        lock.wait(timeout);
                    } catch (InterruptedException e) {
                        throw new RuntimeException(e);
                    }
                }
            }, "w" + i);
            t.start();
            while (!ready) Thread.onSpinWait();
            synchronized (lock) {
                lock.notify();
            }
            synchronized (t) {
                Thread.sleep(2);
            }
            t.join();
        }
        System.out.println("done");
    }
}
