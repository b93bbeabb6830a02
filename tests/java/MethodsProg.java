/** The program of tests/methods.rs: a known call tree, exceptions, native methods, receivers,
 *  every kind of conditional branch and switch, and events switched on and off at run time. */
public class MethodsProg {
    final int v;

    MethodsProg(int v) {
        this.v = v;
    }

    /** Implemented by the agent (tests/agents/methodagent.c): logs the object's ID. */
    static native void mark(Object o);

    /** Implemented by the agent: enables (true) or disables its events. */
    static native void toggle(boolean on);

    /** Implemented by the program's own library (tests/agents/methodnatives.c, mode "natives"):
     *  found by its JNI name; calls fib(n) back through JNI. */
    static native int nativeFib(int n);

    /** Registered with RegisterNatives by that library's JNI_OnLoad: calls this.twice() back. */
    native int nativeTwice();

    /** Throws IllegalStateException. */
    static native int nativeThrow(int n);

    int twice() {
        return 2 * v;
    }

    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static int thrower(int n) {
        if (n == 0) throw new IllegalStateException("bottom");
        return thrower(n - 1);
    }

    static int catcher() {
        try {
            return thrower(2);
        } catch (IllegalStateException e) {
            return -1;
        }
    }

    static int branches(int a, int b, Object o, Object p) {
        int r = 0;
        if (a == 0) r += 1;      // ifne
        if (a != 0) r += 2;      // ifeq
        if (a < 0) r += 4;       // ifge
        if (a >= 0) r += 8;      // iflt
        if (a > 0) r += 16;      // ifle
        if (a <= 0) r += 32;     // ifgt
        if (a == b) r += 64;     // if_icmpne
        if (a != b) r += 128;    // if_icmpeq
        if (a < b) r += 256;     // if_icmpge
        if (a >= b) r += 512;    // if_icmplt
        if (a > b) r += 1024;    // if_icmple
        if (a <= b) r += 2048;   // if_icmpgt
        if (o == p) r += 4096;   // if_acmpne
        if (o != p) r += 8192;   // if_acmpeq
        if (o == null) r += 16384;   // ifnonnull
        if (o != null) r += 32768;   // ifnull
        switch (a) {             // tableswitch 1..4
            case 1: r += 1; break;
            case 2: r += 2; break;
            case 3: r += 3; break;
            case 4: r += 4; break;
            default: r += 5;
        }
        switch (b) {             // lookupswitch -50, 7, 1000
            case 1000: r += 10; break;
            case -50: r += 20; break;
            case 7: r += 30; break;
            default: r += 40;
        }
        return r;
    }

    public static void main(String[] args) {
        String mode = args.length > 0 ? args[0] : "calls";
        if (mode.equals("calls")) {
            int r = fib(4) + catcher();
            MethodsProg p = new MethodsProg(3);
            mark(p);
            r += p.twice();
            System.out.println("result " + r);
        } else if (mode.equals("branches")) {
            Object x = new Object();
            System.out.println("result " + branches(3, 7, x, null) + " " + branches(0, 1000, null, null) + " " + branches(9, 5, x, x));
        } else if (mode.equals("natives")) {
            System.load(System.getProperty("natives.lib"));
            int r = nativeFib(3);
            MethodsProg p = new MethodsProg(4);
            mark(p);
            r += p.nativeTwice();
            try {
                r += nativeThrow(1);
            } catch (IllegalStateException e) {
                r += 100;
            }
            System.out.println("result " + r);
        } else if (mode.equals("toggle")) {
            toggle(false);
            int r = fib(5);
            toggle(true);
            r += fib(3);
            toggle(false);
            r += fib(6);
            System.out.println("result " + r);
        }
    }
}
