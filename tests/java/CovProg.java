/** The program of tests/agents/covagent.c (a coverage agent of JCOV's `type=B` kind).
 *  `loop(100)` is called three times: its `if (i % 5 == 0)` is true 20 times a call. Then a
 *  class (`CovProg$Late`) is defined by the thread "Definer" without being linked, and first
 *  used (linked, initialised) by main after Definer has ended: HotSpot sent its CLASS_LOAD in
 *  Definer, right after its CLASS_LOAD_HOOK. */
public class CovProg {
    static int loop(int n) {
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (i % 5 == 0) k++;
        }
        return k;
    }

    static class Late {
        static int f() { return 7; }
    }

    static class Definer implements Runnable {
        public void run() {
            try {
                Class.forName("CovProg$Late", false, CovProg.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new RuntimeException(e);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int s = 0;
        for (int r = 0; r < 3; r++) s += loop(100);
        Thread t = new Thread(new Definer(), "Definer");
        t.start();
        t.join();
        s += Late.f();
        System.out.println("result " + s);
    }
}
