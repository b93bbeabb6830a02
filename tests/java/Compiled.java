// Compiled methods: one made hot before COMPILED_METHOD_LOAD is enabled (announced by the
// catch-up), one made hot after (announced as it is compiled).
public class Compiled {
    static native int enable(int event);
    static native int disable(int event);

    static int early(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            s += i % 7;
        }
        return s;
    }

    static int hot(int n) {
        int s = 1;
        for (int i = 0; i < n; i++) {
            if ((i & 1) == 0) {
                s = s * 31 + i;
            } else {
                s ^= i;
            }
        }
        return s;
    }

    public static void main(String[] args) {
        long sink = 0;
        for (int i = 0; i < 20000; i++) sink += early(100);
        System.out.println("enable=" + enable(7));
        for (int i = 0; i < 20000; i++) sink += hot(100);
        System.out.println("done " + sink);
    }
}
