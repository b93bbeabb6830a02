// CPU-bound virtual threads (JDK 21+; started through reflection so that the program compiles
// for Java 11): TASKS virtual threads, each running ROUNDS rounds of a computation three
// methods deep (`work` -> `round` -> `spin`), yielding its carrier between rounds, so that at
// any moment a few are mounted and running `spin` and the rest wait for a carrier. Prints one
// deterministic checksum line, the same with or without an agent.
//   java VtBusy [tasks (default 200)] [rounds (default 10)] [spin iterations (default 2000000)]
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

public class VtBusy {
    static long spin(long seed, int n) {
        long x = seed;
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static long round(int task, int r, int n) {
        return spin(task * 1000L + r, n);
    }

    static long work(int task, int rounds, int n) {
        long sum = 0;
        for (int r = 0; r < rounds; r++) {
            sum ^= round(task, r, n);
            Thread.yield();
        }
        return sum;
    }

    public static void main(String[] args) throws Exception {
        int tasks = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        int n = args.length > 2 ? Integer.parseInt(args[2]) : 2_000_000;
        Method m = java.util.concurrent.Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        ExecutorService ex = (ExecutorService) m.invoke(null);
        List<Future<Long>> fs = new ArrayList<>(tasks);
        for (int i = 0; i < tasks; i++) {
            final int t = i;
            fs.add(ex.submit(() -> work(t, rounds, n)));
        }
        long total = 0;
        for (Future<Long> f : fs) total ^= f.get();
        ex.shutdown();
        System.out.println("busy " + tasks + " " + rounds + " " + n + " checksum " + total);
    }
}
