// Allocations of every shape, for tests/alloc_order.rs and the allocstack agent (which keeps its
// own call stack from METHOD_ENTRY/EXIT and charges each OBJECT_ALLOC to the method on top).
// Classes named Ao* are the ones the agent watches. "// SITE:<tag>" marks the allocating lines.
import java.util.concurrent.atomic.AtomicInteger;

class AoBaseOfNode {
    int base;
    AoBaseOfNode() { base = 1; }
}
class AoNode extends AoBaseOfNode {
    AoNode next;
    AoNode() {}
    AoNode(AoNode next) { this.next = next; }
}
class AoPair {
    Object a;
    AoPair(Object a) { this.a = a; }
}
class AoOuter {
    AoNode inner;
    AoOuter() { inner = new AoNode(); } // SITE:outer-inner
}
class AoThrower {
    AoThrower(int x) { this(check(x)); }
    AoThrower(String s) {}
    static String check(int x) {
        if (x >= 0) throw new IllegalStateException("before super");
        return "";
    }
}
class AoArgFail {
    AoArgFail(int x) {}
}
class AoClone implements Cloneable {
    int v = 3;
    AoClone copy() throws CloneNotSupportedException { return (AoClone) clone(); } // SITE:clone
}
class AoRefl {
    public AoRefl() {}
}
class AoJni { public AoJni() {} }
class AoJniA { public AoJniA() {} }
class AoJniV { public AoJniV() {} }
class AoJniAlloc { public AoJniAlloc() {} }
class AoJniThrow {
    public AoJniThrow() { throw new IllegalStateException("JNI constructor throws"); }
}
class AoJniArgs {
    String got;
    public AoJniArgs(int a, double b, long c, String s, double d, int e, int f, int g, double h, float i, long j) {
        got = a + "," + b + "," + c + "," + s + "," + d + "," + e + "," + f + "," + g + "," + h + "," + i + "," + j;
    }
}
class AoFinal {
    @SuppressWarnings({"deprecation", "removal"})
    protected void finalize() {}
}

public class AllocOrder {
    static final int N = 50;
    static Object[] keep = new Object[64];

    static native void jniNew(Class<?> plain, Class<?> a, Class<?> v, Class<?> alloc, int n);
    static native int jniThrow(Class<?> k, int n);
    static native Object jniArgs(Class<?> k);
    /** 1 when the agent resolves o's ID both ways and it is the ID its OBJECT_ALLOC announced. */
    static native int resolve(Object o);

    static void allocNodes() {
        for (int i = 0; i < N; i++) {
            keep[0] = new AoNode(); // SITE:nodes
        }
    }

    static void nested() {
        for (int i = 0; i < N; i++) {
            keep[1] = new AoPair(new AoNode(new AoNode())); // SITE:nested
        }
    }

    static void inConstructor() {
        for (int i = 0; i < N; i++) {
            keep[2] = new AoOuter(); // SITE:outer
        }
    }

    static int fail(int i) {
        throw new IllegalArgumentException("argument " + i);
    }

    static void throwing() {
        for (int i = 0; i < N; i++) {
            try {
                keep[3] = new AoThrower(i); // SITE:thrower
            } catch (IllegalStateException e) {
            }
            try {
                keep[3] = new AoArgFail(fail(i)); // SITE:argfail
            } catch (IllegalArgumentException e) {
            }
        }
    }

    static void arrays() {
        for (int i = 0; i < N; i++) {
            keep[4] = new AoNode[3]; // SITE:array
            keep[5] = new AoNode[2][2]; // SITE:multi
        }
    }

    static void cloning() throws Exception {
        AoClone c = new AoClone(); // SITE:clone-orig
        for (int i = 0; i < N; i++) {
            keep[6] = c.copy();
        }
    }

    static void reflection() throws Exception {
        java.lang.reflect.Constructor<AoRefl> k = AoRefl.class.getDeclaredConstructor();
        for (int i = 0; i < N; i++) {
            keep[7] = k.newInstance(); // SITE:refl
        }
    }

    static void jdkClasses() {
        for (int i = 0; i < N; i++) {
            keep[8] = new AtomicInteger(i); // SITE:atomic
        }
    }

    static void finalizable() {
        for (int i = 0; i < N; i++) {
            keep[9] = new AoFinal(); // SITE:final
        }
    }

    static void resolving() {
        int ok = 0;
        for (int i = 0; i < N; i++) {
            AoNode n = new AoNode(); // SITE:resolve
            ok += resolve(n);
        }
        System.out.println("resolved " + ok + " of " + N);
    }

    public static void main(String[] args) throws Exception {
        allocNodes();
        nested();
        inConstructor();
        throwing();
        arrays();
        cloning();
        reflection();
        jdkClasses();
        finalizable();
        resolving();
        jniNew(AoJni.class, AoJniA.class, AoJniV.class, AoJniAlloc.class, N);
        System.out.println("jni constructors threw " + jniThrow(AoJniThrow.class, N) + " of " + N);
        Object args1 = jniArgs(AoJniArgs.class);
        System.out.println("jni args " + (args1 == null ? "null" : ((AoJniArgs) args1).got));
        keep = new Object[64];
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
        }
        System.out.println("done");
    }
}
