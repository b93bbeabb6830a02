/** A helper class whose natives live in the legacy agent library (tests/agents/nativeagent.c):
 *  no System.loadLibrary, as old profiler helper classes were written. Each call prints
 *  "name=result", or "name=UnsatisfiedLinkError" when the JVM found no implementation. */
public class NativeHelper {
    static native long cpuTime();
    static native int twice(int x);
    static native String twice(String s);
    static native long sum(int[] a);
    static native long sum(long[] a);
    static native String agent_name();
    static native int which(int x);
    static native void missing();   // exported by nobody

    final int base = 40;
    native int plus(int x);

    static class Inner {
        static native int nine();
    }

    interface Call {
        Object call() throws Throwable;
    }

    static void show(String name, Call c) {
        String r;
        try {
            r = String.valueOf(c.call());
        } catch (UnsatisfiedLinkError e) {
            r = "UnsatisfiedLinkError";
        } catch (Throwable t) {
            r = t.toString();
        }
        System.out.println(name + "=" + r);
    }

    public static void main(String[] args) {
        show("cpuTime", () -> cpuTime() > 0 ? "positive" : "not positive");
        show("twice(int)", () -> twice(21));
        show("twice(String)", () -> twice("ab"));
        show("sum(int[])", () -> sum(new int[] {1, 2, 3}));
        show("sum(long[])", () -> sum(new long[] {1, 2, 3}));
        show("agent_name", () -> agent_name());
        show("which", () -> which(0));
        show("plus", () -> new NativeHelper().plus(2));
        show("Inner.nine", () -> Inner.nine());
        show("missing", () -> { missing(); return "bound"; });
        System.out.println("done");
    }
}
