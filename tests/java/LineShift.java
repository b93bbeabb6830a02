// Line numbers after a retransformation moves bytecode (the line-table cache must be refreshed).
public class LineShift {
    static String probe() {
        int[] a = new int[1];
        StackTraceElement[] st = new Throwable().getStackTrace(); String t = Probe.callTrace(0, 3);
        return t.split(";")[1] + " java=" + st[0].getLineNumber() + " len=" + a.length;
    }

    public static void main(String[] args) {
        System.out.println("first " + probe());
        Probe.check(Probe.enable(4) == 0, "enable-object-alloc", "");
        System.out.println("second " + probe());
    }
}
