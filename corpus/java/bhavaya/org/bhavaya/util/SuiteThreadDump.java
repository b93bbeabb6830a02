package org.bhavaya.util;

import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs Bhavaya's ThreadDumpDemo scenario without its window: the demo's own seven
 * DeadlockThreads (one holds lock1 twice and waits on lock2, six block on lock1), then the
 * native thread dump, printed between DUMP-BEGIN and DUMP-END. Before the dump it prints each
 * thread's state and Thread.getStackTrace() ("EXPECT ..." lines) for the checker to compare; after
 * it, it wakes the threads and says how many ended ("RELEASED n/7").
 */
public final class SuiteThreadDump {
    private SuiteThreadDump() {
    }

    public static void main(String[] args) throws Exception {
        Class<?> demo = Class.forName("org.bhavaya.util.ThreadDumpDemo");
        Class<?> deadlock = Class.forName("org.bhavaya.util.ThreadDumpDemo$DeadlockThread");
        Constructor<?> make = deadlock.getDeclaredConstructor();
        make.setAccessible(true);
        java.lang.reflect.Field f2 = demo.getDeclaredField("lock2");
        f2.setAccessible(true);
        Object lock2 = f2.get(null);
        List<Thread> threads = new ArrayList<Thread>();
        for (int i = 0; i < 7; i++) {
            Thread t = (Thread) make.newInstance();
            threads.add(t);
            t.start();
        }
        // wait for the demo's steady state: one WAITING (on lock2), six BLOCKED (on lock1)
        long until = System.currentTimeMillis() + 20000;
        while (System.currentTimeMillis() < until) {
            int waiting = 0;
            int blocked = 0;
            for (Thread t : threads) {
                if (t.getState() == Thread.State.WAITING) waiting++;
                if (t.getState() == Thread.State.BLOCKED) blocked++;
            }
            if (waiting == 1 && blocked == 6) break;
            Thread.sleep(20);
        }
        Thread.sleep(200);
        for (Thread t : threads) {
            StringBuilder sb = new StringBuilder();
            for (StackTraceElement e : t.getStackTrace()) {
                sb.append(e.getClassName()).append('.').append(e.getMethodName()).append(':')
                        .append(e.getLineNumber()).append(';');
            }
            System.out.println("EXPECT thread " + t.getName() + " " + t.getState() + " " + sb);
        }
        StringBuffer dump = new StringBuffer(500);
        Environment.nativeRequestThreadDump(dump);
        System.out.println("DUMP-BEGIN");
        System.out.println(dump);
        System.out.println("DUMP-END");
        System.out.flush();
        // every thread must run again: wake the waiters until all have ended
        until = System.currentTimeMillis() + 15000;
        int ended = 0;
        while (System.currentTimeMillis() < until) {
            synchronized (lock2) {
                lock2.notifyAll();
            }
            ended = 0;
            for (Thread t : threads) {
                if (!t.isAlive()) ended++;
            }
            if (ended == threads.size()) break;
            Thread.sleep(20);
        }
        System.out.println("RELEASED " + ended + "/" + threads.size());
        System.out.println("DEMO-DONE");
        System.exit(0);
    }
}
