// Constructors whose `this(…)`/`super(…)` call throws, and methods that throw from every depth,
// run under the shadow-stack agent (tests/agents/shadowstack.c) by tests/loop_heads.rs
// (`constructors_that_throw_are_exited`). Every frame entered must be exited, by return or by
// exception: the agent counts mismatches and underflows, and the frames still open at
// JVM_SHUT_DOWN. Prints "CALLS <method> <n>" for methods whose METHOD_ENTRY count is checked,
// and "RESULT <n>" (the same with or without an agent).
import java.io.File;
import java.io.FileInputStream;
import java.io.FileNotFoundException;
import java.io.IOException;

public class CtorThrows {
    static int caught, made;

    // A chain of three constructors: the innermost's body throws, so C's and B's `super(…)`
    // calls throw.
    static class A {
        A(int x) {
            if (x < 0) {
                throw new IllegalStateException("A " + x);
            }
            made++;
        }
    }

    static class B extends A {
        B(int x) {
            super(x);
        }
    }

    static class C extends B {
        C(int x) {
            super(x);
        }
    }

    // Argument evaluation that throws, before the chaining call.
    static class D extends A {
        D(String s) {
            super(Integer.parseInt(s));
        }
    }

    // `this(…)` whose own body throws, and `this(…)` whose arguments throw.
    static class E {
        final int v;

        E(int x) {
            this(x, check(x));
        }

        E(int x, int y) {
            if (y > 1000) {
                throw new IllegalArgumentException("E " + y);
            }
            v = x + y;
        }

        E(String s) {
            this(s.length());
        }
    }

    // Throws after `super()`, from the body and from a field initialiser.
    static class F {
        final String s;
        final int n = Integer.parseInt("12");

        F(Object o) {
            s = o.toString();
        }
    }

    // The JDK's own: FileInputStream(String) is `this(name != null ? new File(name) : null)`.
    static class Opener extends FileInputStream {
        Opener(String name) throws FileNotFoundException {
            super(name);
        }
    }

    // A constructor that catches what its callee throws, and one that rethrows from a finally.
    static class G {
        int v;

        G(int x) {
            super();
            try {
                v = deep(x);
            } catch (RuntimeException e) {
                v = -1;
            }
        }

        G(int x, boolean rethrow) {
            this(x);
            try {
                if (rethrow) {
                    deep(x);
                }
            } finally {
                v++;
            }
        }
    }

    static class Boom {
        static final int V;

        static {
            if (Boolean.parseBoolean("true")) {
                throw new IllegalStateException("clinit");
            }
            V = 1;
        }
    }

    static int check(int x) {
        if (x < 0) {
            throw new IllegalArgumentException("check " + x);
        }
        return x;
    }

    // Throws at depth 0 when n is 0, else from n frames down.
    static int deep(int n) {
        if (n == 0) {
            throw new RuntimeException("deep");
        }
        return deep(n - 1) + 1;
    }

    static synchronized int deepSync(int n) {
        return n == 0 ? deep(0) : deepSync(n - 1) + 1;
    }

    // Catches at every depth on the way back.
    static int catchAt(int n, int at) {
        if (n == 0) {
            throw new RuntimeException("catchAt");
        }
        try {
            return catchAt(n - 1, at) + 1;
        } catch (RuntimeException e) {
            if (n == at) {
                caught++;
                return -1;
            }
            throw e;
        }
    }

    static void tryAll(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException | ExceptionInInitializerError | NoClassDefFoundError e) {
            caught++;
        }
    }

    static void round(String missing) {
        tryAll(() -> new C(-1));
        tryAll(() -> new C(1));
        tryAll(() -> new B(-2));
        tryAll(() -> new D("x"));
        tryAll(() -> new D("-3"));
        tryAll(() -> new D("4"));
        tryAll(() -> new E(-1));
        tryAll(() -> new E(2000));
        tryAll(() -> new E(3));
        tryAll(() -> new E((String) null));
        tryAll(() -> new F(null));
        tryAll(() -> new F("f"));
        tryAll(() -> new G(3));
        tryAll(() -> new G(2, true));
        tryAll(() -> new G(2, false));
        try {
            new FileInputStream(missing).close();
        } catch (IOException e) {
            caught++;
        }
        try {
            new FileInputStream(new File(missing)).close();
        } catch (IOException e) {
            caught++;
        }
        try {
            new Opener(missing).close();
        } catch (IOException e) {
            caught++;
        }
        for (int d = 0; d < 6; d++) {
            final int depth = d;
            tryAll(() -> deep(depth));
            tryAll(() -> deepSync(depth));
            for (int at = 0; at <= d + 1; at++) {
                final int where = at;
                tryAll(() -> catchAt(depth, where));
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String missing = new File(System.getProperty("java.io.tmpdir"), "ctor-throws-missing-" + System.nanoTime())
                .getPath();
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 300;
        for (int i = 0; i < rounds; i++) {
            round(missing);
        }
        tryAll(() -> System.out.println(Boom.V));
        tryAll(() -> System.out.println(Boom.V));
        System.out.println("CALLS round " + rounds);
        System.out.println("RESULT caught=" + caught + " made=" + made);
    }
}
