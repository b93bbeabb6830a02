// Allocations of every kind, N of each, for the heap tests; then all of them become garbage.
import java.lang.reflect.Array;

class Counted {}
class CountedM {}
class CountedR {}
class CountedC {
    public CountedC() {}
}
class CountedK implements Cloneable {
    CountedK copy() throws CloneNotSupportedException {
        return (CountedK) clone();
    }
}
class CountedJ {}
class PreExisting {}

public class Allocs {
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        PreExisting pre = new PreExisting();
        if (args.length > 1 && args[1].equals("enable-late")) {
            Probe.check(Probe.enable(4) == 0, "enable-object-alloc", "");
            Probe.check(Probe.request(4, pre) == 0, "request-pre-existing", "");
            Probe.mark("pre id=" + Long.toHexString(Probe.objectId(pre)));
        }
        Probe.mark("start");
        Object[] hold = new Object[16];
        Object[] a = new Object[n], b = new Object[n];
        for (int i = 0; i < n; i++) a[i] = new Counted();
        hold[0] = a;
        a = new Object[n];
        for (int i = 0; i < n; i++) {
            a[i] = new boolean[101];
            b[i] = new byte[1931];
        }
        hold[1] = a;
        hold[2] = b;
        a = new Object[n];
        b = new Object[n];
        Object[] c = new Object[n], d = new Object[n];
        for (int i = 0; i < n; i++) {
            a[i] = new char[103];
            b[i] = new short[104];
            c[i] = new int[105];
            d[i] = new long[106];
        }
        hold[3] = a;
        hold[4] = b;
        hold[5] = c;
        hold[6] = d;
        a = new Object[n];
        b = new Object[n];
        c = new Object[n];
        d = new Object[n];
        for (int i = 0; i < n; i++) {
            a[i] = new float[107];
            b[i] = new double[108];
            c[i] = new Counted[5];
            d[i] = new CountedM[2][3];
        }
        hold[7] = a;
        hold[8] = b;
        hold[9] = c;
        hold[10] = d;
        a = new Object[n];
        b = new Object[n];
        c = new Object[n];
        CountedK k = new CountedK();
        for (int i = 0; i < n; i++) {
            a[i] = Array.newInstance(CountedR.class, 7);
            b[i] = CountedC.class.getDeclaredConstructor().newInstance();
            c[i] = k.copy();
        }
        hold[11] = a;
        hold[12] = b;
        hold[13] = c;
        Probe.jniAlloc(CountedJ.class, n);
        Probe.jniArrays(CountedJ.class, n);
        Probe.globalRefs(k);
        Probe.mark("end");
        hold = null;
        a = b = c = d = null;
        k = null;
        pre = null;
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        Probe.mark("freed");
        System.out.println("done");
    }
}
