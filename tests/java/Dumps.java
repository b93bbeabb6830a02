/** Heap and object dumps: objects with known values, dumped from natives of the test agent. */
public class Dumps {
    interface Konst { int K = 7; String KS = "konst"; }   // interface fields shift JVMTI field indexes
    static class Base { int baseInt = 11; Object baseRef; static long baseStatic = -5L; }
    static class Holder extends Base implements Konst {
        static int counter = 99;
        static String label = "static label";
        int answer = 42;
        long big = 0x1122334455667788L;
        String text = "hello dump";
        Object[] items;
        byte b = -2;
        char c = 'Z';
        double d = 1.5;
        boolean flag = true;
        short sh = -300;
        float fl = 2.25f;
    }
    static class Empty {}
    static Holder keep;
    static int[] ints = {1, 2, 3, 0x7fffffff};

    static native int heapDump(int level);
    static native int objectDump(Object o);
    static native int monitorDump(Object[] named);
    static native void rawHold();
    static native void rawRelease();

    static final Object lockA = new Object(), lockB = new Object(), waitLock = new Object(), mine = new Object();

    static Thread start(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    static void until(Thread t, Thread.State s) throws InterruptedException {
        while (t.getState() != s) Thread.sleep(5);
    }

    /** A scripted deadlock (A holds lockA and wants lockB, B the reverse), a thread in
     *  Object.wait, main holding a monitor twice, and agent threads on raw monitors. */
    static void monitors() throws InterruptedException {
        java.util.concurrent.CountDownLatch both = new java.util.concurrent.CountDownLatch(2);
        Runnable ab = () -> { synchronized (lockA) { both.countDown(); await(both); synchronized (lockB) { } } };
        Runnable ba = () -> { synchronized (lockB) { both.countDown(); await(both); synchronized (lockA) { } } };
        Thread a = start("deadlock-A", ab), b = start("deadlock-B", ba);
        Thread w = start("waiter", () -> {
            synchronized (waitLock) {
                try { waitLock.wait(); } catch (InterruptedException e) { }
            }
        });
        until(a, Thread.State.BLOCKED);
        until(b, Thread.State.BLOCKED);
        until(w, Thread.State.WAITING);
        rawHold();
        synchronized (mine) {
            synchronized (mine) {
                System.out.println("monitorDump=" + monitorDump(new Object[] {"lockA", lockA, "lockB", lockB, "waitLock", waitLock, "mine", mine}));
            }
        }
        rawRelease();
    }

    static void await(java.util.concurrent.CountDownLatch l) {
        try { l.await(); } catch (InterruptedException e) { }
    }

    public static void main(String[] args) throws InterruptedException {
        Holder h = new Holder();
        h.items = new Object[] {"x", Integer.valueOf(5), null, h};
        h.baseRef = h.items;
        keep = h;
        Object local = new Empty();
        String mode = args.length > 0 ? args[0] : "heap";
        if (mode.equals("monitor")) {
            monitors();
        } else if (mode.equals("heap")) {
            for (int level : new int[] {0, 1, 2, -1}) System.out.println("heapDump(" + level + ")=" + heapDump(level));
        } else {
            Object[] which = {h, h.items, ints, Holder.class, h.text};
            for (Object o : which) System.out.println("objectDump=" + objectDump(o));
        }
        System.out.println("done " + local.hashCode() % 1);
    }
}
