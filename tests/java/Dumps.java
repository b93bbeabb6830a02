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

    public static void main(String[] args) {
        Holder h = new Holder();
        h.items = new Object[] {"x", Integer.valueOf(5), null, h};
        h.baseRef = h.items;
        keep = h;
        Object local = new Empty();
        String mode = args.length > 0 ? args[0] : "heap";
        if (mode.equals("heap")) {
            for (int level : new int[] {0, 1, 2, -1}) System.out.println("heapDump(" + level + ")=" + heapDump(level));
        } else {
            Object[] which = {h, h.items, ints, Holder.class, h.text};
            for (Object o : which) System.out.println("objectDump=" + objectDump(o));
        }
        System.out.println("done " + local.hashCode() % 1);
    }
}
