// For the name-keeping agent (tests/agents/namekeeper.c, tests/names.rs): classes of the
// boot, platform and application loaders, lambdas, reflection, threads that allocate and
// wait, a hot method that gets compiled, and a class that is unloaded.
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntUnaryOperator;

public class Names {
    static class OneShot extends ClassLoader {
        OneShot() {
            super(null);
        }

        Class<?> load() throws Exception {
            try (InputStream in = Names.class.getResourceAsStream("/Unloadable.class")) {
                byte[] b = in.readAllBytes();
                return defineClass("Unloadable", b, 0, b.length);
            }
        }
    }

    static final Object LOCK = new Object();
    static boolean go;

    static int hot(int n) {
        int s = 1;
        for (int i = 0; i < n; i++) {
            s = (i & 1) == 0 ? s * 31 + i : s ^ i;
        }
        return s;
    }

    static List<Object> allocate(int n) {
        List<Object> l = new ArrayList<>();
        Map<String, Integer> m = new HashMap<>();
        for (int i = 0; i < n; i++) {
            l.add("s" + i);
            m.put("k" + i, i);
            l.add(new int[i % 5]);
        }
        l.add(m);
        return l;
    }

    public static void main(String[] args) throws Exception {
        long sink = 0;
        for (int i = 0; i < 20000; i++) sink += hot(100);
        sink += allocate(2000).size();
        IntUnaryOperator f = x -> x + 1;
        sink += f.applyAsInt(41);
        sink += (Integer) Names.class.getDeclaredMethod("hot", int.class).invoke(null, 5);
        Thread waiter = new Thread(() -> {
            synchronized (LOCK) {
                while (!go) {
                    try {
                        LOCK.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
            allocate(200);
        }, "Waiter");
        waiter.start();
        Thread[] workers = new Thread[3];
        for (int t = 0; t < workers.length; t++) {
            workers[t] = new Thread(() -> allocate(500), "Worker-" + t);
            workers[t].start();
        }
        for (Thread t : workers) t.join();
        Thread.sleep(100);
        synchronized (LOCK) {
            go = true;
            LOCK.notifyAll();
        }
        waiter.join();
        OneShot l = new OneShot();
        Class<?> c = l.load();
        sink += (Integer) c.getMethod("twice", int.class).invoke(null, 21);
        c = null;
        l = null;
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        System.out.println("done " + sink);
    }
}
