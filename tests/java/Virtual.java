// Events and GetCallTrace from a virtual thread (JDK 21+), started through reflection so that
// the program compiles for Java 11.
import java.util.concurrent.atomic.AtomicReference;

public class Virtual {
    static String inside() {
        Object[] keep = new Object[5];
        for (int i = 0; i < keep.length; i++) keep[i] = new Counted();
        return Probe.callTrace(0, 4) + " kept=" + keep.length;
    }

    public static void main(String[] args) throws Exception {
        AtomicReference<String> result = new AtomicReference<>();
        Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        Runnable r = () -> result.set(inside());
        Thread t = (Thread) Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class).invoke(builder, r);
        t.join();
        System.out.println("virtual " + result.get());
    }
}
