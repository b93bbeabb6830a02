// CLASS_UNLOAD: a class defined by a throwaway loader dies with it.
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
}
