// JNI natives of the recorder test agent (tests/agents/recorder.c), for the Java test programs.
public final class Probe {
    static {
        System.load(System.getProperty("probe.lib"));
    }
    private Probe() {}

    public static native void mark(String s);
    public static native long threadEnv();
    public static native String callTrace(long env, int depth);
    public static native void suspend(long env);
    public static native void resume(long env);
    public static native int status(long env);
    public static native boolean hasRun(long env);
    public static native void setTls(long env, long v);
    public static native long getTls(long env);
    public static native long cpuTime();
    public static native long threadObjectId(long env);
    public static native long objectId(Object o);
    public static native Object objectFor(long id);
    public static native Object callerClass();
    public static native int enable(int ev);
    public static native int disable(int ev);
    public static native int request(int ev, Object o);
    public static native int requestId(int ev, long id);
    public static native void runGC();
    public static native void disableGC();
    public static native void enableGC();
    public static native long rawCreate(String name);
    public static native void rawEnter(long m);
    public static native void rawExit(long m);
    public static native void rawWait(long m, long ms);
    public static native void rawNotifyAll(long m);
    public static native void rawDestroy(long m);
    public static native void gcLockTouch();
    public static native int createSystemThread(String name, int prio);
    public static native int[] threadList(long[] envs, boolean suspend);
    public static native void profilerExit(int code);
    public static native void sigquit();
    public static native String garbage();
    public static native void jniAlloc(Class<?> k, int n);
    public static native void jniArrays(Class<?> k, int n);
    public static native void globalRefs(Object o);

    /** Prints "OK what" or "FAIL what: detail"; the Rust test asserts on these lines. */
    public static void check(boolean ok, String what, Object detail) {
        System.out.println((ok ? "OK " : "FAIL ") + what + (ok ? "" : ": " + detail));
    }

    public static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }
}
