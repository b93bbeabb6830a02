// CLASS_UNLOAD: a class defined by a throwaway loader dies with it.
// `rounds=N`: N loaders one after the other, each class dropped and a collection run before the
// next, so that each class dies in a collection of its own.
import java.io.InputStream;

public class Unload {
    static class OneShot extends ClassLoader {
        OneShot() {
            super(null);
        }

        Class<?> load() throws Exception {
            try (InputStream in = Unload.class.getResourceAsStream("/Unloadable.class")) {
                byte[] b = in.readAllBytes();
                return defineClass("Unloadable", b, 0, b.length);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 && args[0].startsWith("rounds=") ? Integer.parseInt(args[0].substring(7)) : 0;
        if (rounds > 0) {
            for (int i = 0; i < rounds; i++) {
                oneRound(i);
                System.gc();
                Thread.sleep(20);
            }
            for (int i = 0; i < 3; i++) {
                System.gc();
                Thread.sleep(100);
            }
            Probe.mark("after-gcs");
            System.out.println("done");
            return;
        }
        OneShot l = new OneShot();
        Class<?> c = l.load();
        Object r = c.getMethod("twice", int.class).invoke(null, 21);
        Probe.mark("loaded " + r + " id=" + Long.toHexString(Probe.objectId(c)));
        c = null;
        l = null;
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(200);
        }
        Probe.mark("after-gcs");
        System.out.println("done");
    }

    // In a frame of its own: nothing of the loader or the class stays on the caller's stack.
    static void oneRound(int i) throws Exception {
        Class<?> c = new OneShot().load();
        Object r = c.getMethod("twice", int.class).invoke(null, i);
        Probe.mark("round " + i + " " + r + " id=" + Long.toHexString(Probe.objectId(c)));
    }
}
