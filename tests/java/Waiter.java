import java.io.File;

/** A program that is controlled from outside: prints its pid, then, whenever a file
 *  `<dir>/go<N>` appears, allocates 1000 WaiterMarker objects and prints "ROUND N"; it ends when
 *  `<dir>/stop` appears (or after 60 s). */
public class Waiter {
    static Object keep;

    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        System.out.println("PID " + ProcessHandle.current().pid());
        System.out.flush();
        long end = System.currentTimeMillis() + 60_000;
        int round = 1;
        while (System.currentTimeMillis() < end && !new File(dir, "stop").exists()) {
            if (new File(dir, "go" + round).exists()) {
                for (int i = 0; i < 1000; i++) keep = new WaiterMarker(i);
                System.out.println("ROUND " + round);
                System.out.flush();
                round++;
            }
            Thread.sleep(20);
        }
        System.out.println("DONE");
    }
}

class WaiterMarker {
    final int n;
    WaiterMarker(int n) { this.n = n; }
}
