// Java monitors: a scripted contention (holder keeps the lock while blocker waits to enter), a
// timed wait that times out, and a wait ended by notify.
public class JavaMonitors {
    static final class ContendedLock {}
    static final class TimedLock {}
    static final class NotifyLock {}
    static volatile boolean held, waiting;

    static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        ContendedLock lock = new ContendedLock();
        Thread holder = new Thread(() -> {
            synchronized (lock) {
                held = true;
                pause(400);
            }
        }, "holder");
        holder.start();
        while (!held) Thread.sleep(1);
        Thread blocker = new Thread(() -> {
            synchronized (lock) {
                held = false;
            }
        }, "blocker");
        blocker.start();
        blocker.join();
        holder.join();

        TimedLock timed = new TimedLock();
        Thread waiter = new Thread(() -> {
            synchronized (timed) {
                try {
                    timed.wait(150);
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }
        }, "waiter");
        waiter.start();
        waiter.join();

        NotifyLock n = new NotifyLock();
        Thread notified = new Thread(() -> {
            synchronized (n) {
                waiting = true;
                try {
                    n.wait();
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }
        }, "notified");
        notified.start();
        while (!waiting) Thread.sleep(1);
        pause(100);
        synchronized (n) {
            n.notify();
        }
        notified.join();
        System.out.println("done");
    }
}
