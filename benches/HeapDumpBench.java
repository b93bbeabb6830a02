/** Heap-dump benchmark: holds N live objects (half small nodes, half their payloads: Integers,
 *  byte[8] and Strings), then dumps the heap with `jcmd <pid> GC.heap_dump`, and then runs the
 *  steps of the comma-separated list in args[3] (default "shim,shim"): `shim` is the shim's
 *  level-2 HEAP_DUMP (a native of the JVMPI benchmark agent, benches/dump_jvmpi.c), `f1` to
 *  `f6` the plain-JVMTI floor walks (natives of benches/dump_floor_jvmti.c); `sleep<ms>` waits
 *  (for a profiler to attach after jcmd's dump). */
public class HeapDumpBench {
    static final class Node { int id; long stamp; Node next; Object payload; }

    static Node[] nodes;

    static native void shimDump();

    static native void floorDump(int mode);

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]) / 2;
        String jcmd = args[1], file = args[2];
        nodes = new Node[n];
        Node prev = null;
        for (int i = 0; i < n; i++) {
            Node x = new Node();
            x.id = i;
            x.stamp = i * 31L;
            x.next = prev;
            x.payload = i % 3 == 0 ? Integer.valueOf(i) : i % 3 == 1 ? (Object) new byte[8] : "s" + i;
            nodes[i] = x;
            prev = x;
        }
        System.gc();
        long pid = ProcessHandle.current().pid();
        new java.io.File(file).delete();
        var os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long c = os.getProcessCpuTime();
        long t = System.nanoTime();
        Process p = new ProcessBuilder(jcmd, Long.toString(pid), "GC.heap_dump", file).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        p.waitFor();
        double wall = (System.nanoTime() - t) / 1e6;
        // This process's CPU time while jcmd ran (the dump and its full GC, the attach listener).
        double cpu = (os.getProcessCpuTime() - c) / 1e6;
        // "Heap dump file created [<bytes> bytes in <secs> secs]"
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\[(\\d+) bytes in ([0-9.]+) secs\\]").matcher(out);
        if (m.find()) {
            System.out.printf("jcmd: ms=%.1f cpu_ms=%.1f bytes=%s wall_ms=%.1f%n", Double.parseDouble(m.group(2)) * 1e3, cpu, m.group(1), wall);
        } else {
            System.out.println("jcmd: failed: " + out.trim().replace('\n', ' '));
        }
        new java.io.File(file).delete();
        for (String step : (args.length > 3 ? args[3] : "shim,shim").split(",")) {
            if (step.equals("shim")) shimDump();
            else if (step.startsWith("sleep")) Thread.sleep(Long.parseLong(step.substring(5)));
            else floorDump(Integer.parseInt(step.substring(1)));
        }
        System.out.println("objects: " + (2L * n) + " " + prev.id);
    }
}
