// The program the fidelity tests run under tests/agents/realagent.c (see tests/fidelity.rs).
//
// Every line where this program allocates carries a marker "// SITE:<tag> <what>..." naming
// what is allocated on that line, the way the agent names it in its SITE lines: a class name,
// "[" + element class for an object array ("[RealSiteA", "[[I" for int[][]), "[I" for int[];
// "*" means "whatever the VM makes on the program's behalf here". The tests find the lines by
// these markers, never by number.
//
// The program makes no reflective calls, no lambdas and no string concatenation, so that every
// allocation its own methods make is one of the marked ones.
public class RealProg {
    // JDK 1.2-era tools shipped Java helper classes whose natives live in the agent library
    // itself, without System.loadLibrary: HotSpot looked agent libraries up for JNI natives.
    static native long agentCpuTime();

    static Object sink;
    static final String[] NAMES = {"real-worker-0", "real-worker-1", "real-worker-2"}; // SITE:names [java.lang.String

    public static void main(String[] args) throws Exception {
        nativeCheck();
        sites(3);
        threads();
        loadOnly();
        System.gc();
        Thread.sleep(300); // the GC events come from the shim's thread, after the collection
        System.out.println("DONE");
        // main returns normally: the launcher detaches this thread (THREAD_END) and
        // DestroyJavaVM runs on it again, attached anew, up to JVM_SHUT_DOWN.
    }

    static void nativeCheck() {
        String result;
        try {
            result = agentCpuTime() >= 0 ? "ok" : "negative"; // SITE:native *
        } catch (UnsatisfiedLinkError e) {
            result = "UnsatisfiedLinkError";
        }
        System.out.print("NATIVE ");
        System.out.println(result);
    }

    // One allocation of each shape, each on its own line.
    static void sites(int n) {
        sink = new RealSiteA(); // SITE:a RealSiteA
        sink = new RealSiteSub(n); // SITE:sub RealSiteSub
        sink = new RealSiteSelf(1); // SITE:self-outer RealSiteSelf
        sink = new int[n]; // SITE:int-array [I
        sink = new RealSiteA[n]; // SITE:obj-array [RealSiteA
        sink = new int[2][3]; // SITE:multi [[I [I
        // The element class is loaded here for the first time and not linked yet.
        sink = new RealSiteUnlinked[n]; // SITE:unlinked [RealSiteUnlinked
    }

    static void threads() throws InterruptedException {
        Thread[] ts = new Thread[NAMES.length]; // SITE:thread-array [java.lang.Thread
        for (int i = 0; i < ts.length; i++) {
            ts[i] = new Thread(new RpWorker(i), NAMES[i]); // SITE:thread java.lang.Thread RpWorker
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
    }

    // A class that is loaded and never linked: HotSpot 1.5 sent its CLASS_LOAD all the same.
    static void loadOnly() throws ClassNotFoundException {
        Class<?> c = Class.forName("RealLoadedOnly", false, RealProg.class.getClassLoader());
        System.out.print("LOADED ");
        System.out.println(c.getName());
    }
}

class RealSiteA {
    int a = 1;
    long b = 2;
}

class RealSiteBase {
    int base;

    RealSiteBase(int b) {
        base = b;
    }
}

class RealSiteSub extends RealSiteBase {
    int sub;

    RealSiteSub(int s) {
        super(s + 1);
        sub = s;
    }
}

// A constructor that makes another instance of its own class.
class RealSiteSelf {
    RealSiteSelf child;

    RealSiteSelf(int depth) {
        if (depth > 0) {
            child = new RealSiteSelf(depth - 1); // SITE:self-inner RealSiteSelf
        }
    }
}

class RealSiteUnlinked {
    static int count;
    int x;
    String name;
}

class RealLoadedOnly {
    static int value = 42;
}

// Allocates for a while, so that events come from its own thread and a sampler can catch it
// inside an allocation. Its class does not match the agent's site prefix: no SITE lines.
class RpWorker implements Runnable {
    final int id;
    static volatile Object keep;

    RpWorker(int id) {
        this.id = id;
    }

    public void run() {
        Object last = null;
        for (int i = 0; i < 4000; i++) {
            last = new Object();
            if ((i & 1023) == 0) {
                last = new StringBuilder().append(id).append(i).toString();
            }
        }
        keep = last;
    }
}
