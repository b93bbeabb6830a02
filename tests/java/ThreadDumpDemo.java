/**
 * The deadlock demo of a run-time thread dump (tests/agents/threaddump.c): thread "holder" owns
 * lock1 and waits on lock2 (so lock2 has no owner and one thread waiting to be notified), six
 * threads block entering lock1. The library is loaded with System.load and asks JVMPI for a
 * MONITOR_DUMP; then everything is released and every thread must end.
 *
 * Args: <library path> <output file>. Prints "JAVA <thread> <class>.<method>:<file>:<line>" for
 * the frames of this class in each thread's Thread.getStackTrace() before the dump,
 * "monitors=<n>" and "released=<n>".
 */
public class ThreadDumpDemo {
    static final Object lock1 = new Object();
    static final Object lock2 = new Object();
    static volatile boolean go;
    static int entered;

    static native int dump(String out, Object[] named);

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        Thread holder = new Thread(ThreadDumpDemo::hold, "holder");
        holder.start();
        while (holder.getState() != Thread.State.WAITING) {
            Thread.sleep(5);
        }
        Thread[] blocked = new Thread[6];
        for (int i = 0; i < blocked.length; i++) {
            blocked[i] = new Thread(ThreadDumpDemo::enter, "blocked-" + i);
            blocked[i].start();
        }
        for (Thread t : blocked) {
            while (t.getState() != Thread.State.BLOCKED) {
                Thread.sleep(5);
            }
        }
        Thread[] all = new Thread[blocked.length + 1];
        all[0] = holder;
        System.arraycopy(blocked, 0, all, 1, blocked.length);
        for (Thread t : all) {
            for (StackTraceElement e : t.getStackTrace()) {
                if (e.getClassName().startsWith("ThreadDumpDemo") && !e.getClassName().contains("$$")) {
                    System.out.println("JAVA " + t.getName() + " " + e.getClassName() + "." + e.getMethodName() + ":"
                            + e.getFileName() + ":" + e.getLineNumber());
                }
            }
        }
        int n = dump(args[1], new Object[] {"lock1", lock1, "lock2", lock2});
        System.out.println("monitors=" + n);
        synchronized (lock2) {
            go = true;
            lock2.notifyAll();
        }
        for (Thread t : all) {
            t.join(20000);
        }
        int alive = 0;
        for (Thread t : all) {
            if (t.isAlive()) {
                alive++;
            }
        }
        synchronized (lock1) {
            System.out.println("released=" + (entered + 1) + " alive=" + alive);
        }
    }

    static void hold() {
        synchronized (lock1) {
            synchronized (lock2) {
                while (!go) {
                    try {
                        lock2.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        }
    }

    static void enter() {
        synchronized (lock1) {
            entered++;
        }
    }
}
