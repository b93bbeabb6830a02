/** Objects kept alive in known numbers, for a heap profiler that counts instances per class. */
public class Census {
    static class Leaf { int n; Leaf(int n) { this.n = n; } }
    static class Node { Node next; Object payload; }
    static class Dropped { long x; }

    static Leaf[] leaves = new Leaf[1234];
    static Node head;

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < leaves.length; i++) leaves[i] = new Leaf(i);
        for (int i = 0; i < 56; i++) {
            Node n = new Node();
            n.next = head;
            n.payload = new int[i];
            head = n;
        }
        long sum = 0;
        for (int i = 0; i < 5000; i++) sum += new Dropped().x;   // garbage: not reachable
        System.out.println("kept " + leaves.length + " " + sum);
        if (args.length > 1 && args[0].equals("signal")) {
            // SIGQUIT: the JVM's data dump request (DATA_DUMP_REQUEST); the agent writes its
            // census file from that event, on the signal thread.
            java.io.File out = new java.io.File(args[1]);
            new ProcessBuilder("kill", "-QUIT", Long.toString(ProcessHandle.current().pid())).inheritIO().start().waitFor();
            for (int i = 0; i < 3000 && !out.exists(); i++) Thread.sleep(10);
            System.out.println("census " + (out.exists() ? "written" : "missing"));
        }
        if (args.length > 1 && args[0].equals("wait")) {
            System.out.println("ready");
            Thread.sleep(Long.parseLong(args[1]));
        }
    }
}
