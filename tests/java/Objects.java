// Object IDs, GetMethodClass, and RequestEvent for CLASS_LOAD / THREAD_START / OBJECT_ALLOC.
public class Objects {
    public static void main(String[] args) throws Exception {
        Object a = new Object(), b = new StringBuilder("x");
        long ia = Probe.objectId(a), ib = Probe.objectId(b);
        Probe.check(ia != 0 && ib != 0 && ia != ib, "ids-distinct-nonzero", ia + "/" + ib);
        Probe.check(Probe.objectId(a) == ia, "id-stable", Probe.objectId(a));
        for (int i = 0; i < 3; i++) {
            byte[][] junk = new byte[2000][];
            for (int k = 0; k < junk.length; k++) junk[k] = new byte[1000];
            System.gc();
        }
        Probe.check(Probe.objectId(a) == ia && Probe.objectId(b) == ib, "id-stable-across-gc", Probe.objectId(a));
        Probe.check(Probe.objectFor(ia) == a && Probe.objectFor(ib) == b, "id-to-object", Probe.objectFor(ia));
        Probe.check(Probe.objectId(null) == 0 && Probe.objectFor(0) == null, "null-id", "");
        Object cc = Probe.callerClass();
        Probe.check(cc == Objects.class, "get-method-class", cc);
        int[] arr = new int[10];
        Circle circle = new Circle(2);
        String[] strings = new String[3];
        Probe.mark("requests");
        Probe.check(Probe.request(4 /* OBJECT_ALLOC */, circle) == 0, "request-object-alloc", "");
        Probe.check(Probe.request(4, arr) == 0, "request-object-alloc-int-array", "");
        Probe.check(Probe.request(4, strings) == 0, "request-object-alloc-object-array", "");
        Probe.check(Probe.request(42 /* CLASS_LOAD */, Circle.class) == 0, "request-class-load", "");
        Probe.check(Probe.request(33 /* THREAD_START */, Thread.currentThread()) == 0, "request-thread-start", "");
        Probe.check(Probe.request(42, circle) == -1, "request-class-load-of-non-class-fails", "");
        Probe.mark("ids circle=" + Long.toHexString(Probe.objectId(circle)) + " circleclass="
                + Long.toHexString(Probe.objectId(Circle.class)) + " main="
                + Long.toHexString(Probe.objectId(Thread.currentThread())) + " arr="
                + Long.toHexString(Probe.objectId(arr)));
        System.out.println("done");
    }
}
