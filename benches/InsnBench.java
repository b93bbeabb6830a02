/** Instruction-heavy benchmark for INSTRUCTION_START: the corpus workload's `spin` loop, 16
 *  bytecode instructions per iteration (offsets 4..25 of `spin`). Prints the timed loop's
 *  nanoseconds per iteration and the iterations made. Arguments: iterations per call, calls. */
public class InsnBench {
    static long spin(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += (i * 31L) ^ (s >>> 3);
        }
        return s;
    }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        int reps = Integer.parseInt(args[1]);
        long sum = spin(n); // first call: the method resolved, the code warmed
        long t0 = System.nanoTime();
        for (int r = 0; r < reps; r++) sum += spin(n);
        long t1 = System.nanoTime();
        long iters = (long) n * reps;
        System.out.println("iters " + iters + " loop_ns " + (t1 - t0) + " ns_per_iter " + String.format("%.2f", (t1 - t0) / (double) iters) + " sum " + sum);
    }
}
