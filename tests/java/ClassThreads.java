/**
 * A single-threaded program, as far as its classes go (tests/class_threads.rs): main loads
 * 24 classes without linking them (Class.forName with initialize=false); a second thread
 * links them later (reflection), and some are linked by nothing. HotSpot 1.5 sent each
 * CLASS_LOAD in main, when main defined the class.
 */
public class ClassThreads {
    static class A0 { int f0; int g() { return f0; } }
    static class A1 { int f1; int g() { return f1; } }
    static class A2 { int f2; int g() { return f2; } }
    static class A3 { int f3; int g() { return f3; } }
    static class A4 { int f4; int g() { return f4; } }
    static class A5 { int f5; int g() { return f5; } }
    static class A6 { int f6; int g() { return f6; } }
    static class A7 { int f7; int g() { return f7; } }
    static class A8 { int f8; int g() { return f8; } }
    static class A9 { int f9; int g() { return f9; } }
    static class A10 { int f10; int g() { return f10; } }
    static class A11 { int f11; int g() { return f11; } }
    static class A12 { int f12; int g() { return f12; } }
    static class A13 { int f13; int g() { return f13; } }
    static class A14 { int f14; int g() { return f14; } }
    static class A15 { int f15; int g() { return f15; } }
    static class A16 { int f16; int g() { return f16; } }
    static class A17 { int f17; int g() { return f17; } }
    static class A18 { int f18; int g() { return f18; } }
    static class A19 { int f19; int g() { return f19; } }
    static class A20 { int f20; int g() { return f20; } }
    static class A21 { int f21; int g() { return f21; } }
    static class A22 { int f22; int g() { return f22; } }
    static class A23 { int f23; int g() { return f23; } }

    public static void main(String[] args) throws Exception {
        ClassLoader cl = ClassThreads.class.getClassLoader();
        final Class<?>[] ks = new Class<?>[24];
        for (int i = 0; i < ks.length; i++) {
            ks[i] = Class.forName("ClassThreads$A" + i, false, cl);
        }
        Thread t = new Thread(new Runnable() {
            public void run() {
                for (int i = 0; i < ks.length; i += 2) ks[i].getDeclaredMethods();
            }
        }, "Reflector");
        t.start();
        t.join();
        Thread.sleep(300);
        long sum = 0;
        for (int i = 0; i < 20000; i++) sum += new int[8].length + String.valueOf(i).length();
        System.out.println("done " + sum);
    }
}
