// Threads for the thread-identity checks: contended monitors whose owners end soon after they
// leave them, waits and notifies, joins (the ending thread wakes its joiners from its own
// Thread object's lock), many short-lived threads, and collections.
public class ThreadMix {
    static final Object LOCK = new Object();
    static final Object SIGNAL = new Object();
    static volatile int counter;

    static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 30;
        for (int r = 0; r < rounds; r++) {
            Thread[] ts = new Thread[6];
            for (int i = 0; i < ts.length; i++) {
                final int k = i;
                ts[i] = new Thread(() -> {
                    // The owner leaves the lock and ends at once, while others are blocked on it.
                    synchronized (LOCK) {
                        counter++;
                        pause(k % 2 == 0 ? 2 : 0);
                    }
                    if (k == 0) {
                        synchronized (SIGNAL) {
                            try {
                                SIGNAL.wait(5);
                            } catch (InterruptedException e) {
                                throw new RuntimeException(e);
                            }
                        }
                    }
                }, "mix-" + r + "-" + i);
            }
            // Joiners of a thread that is still running: its end wakes them.
            Thread joiner = new Thread(() -> {
                try {
                    ts[1].join();
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }, "joiner-" + r);
            synchronized (LOCK) {
                for (Thread t : ts) t.start();
                joiner.start();
                pause(3);
            }
            synchronized (SIGNAL) {
                SIGNAL.notifyAll();
            }
            for (Thread t : ts) t.join();
            joiner.join();
            if (r % 10 == 0) System.gc();
        }
        System.gc();
        System.out.println("done counter=" + counter);
    }
}
