package bci;

import java.io.BufferedReader;
import java.io.FileReader;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Runs on a JDK whose own modules were rewritten by {@code instrument_allocations} and patched
 * in with {@code --patch-module} (tests/bci.rs), under -Xverify:all, with the counting tracker
 * {@code java.lang.JvmpiBciTracker} patched into java.base.
 *
 * <p>1. The JDK booted, so java.base's rewritten classes — {@code Object.<init>} included —
 * loaded, verified and ran. 2. With the tracker on, JDK code reports the objects and arrays it
 * allocates: {@code objects <n>} and {@code arrays <n>} lines. 3. Every class named in the file
 * given as the first argument (lines {@code <module> <internal name>}) is loaded by its module's
 * class loader and linked ({@code getDeclaredMethods}); {@code VERIFY}/{@code FORMAT} lines for
 * VerifyErrors/ClassFormatErrors, {@code OTHER} for the first few other failures, and a
 * {@code summary} line.
 */
public class BootCheck {
    static volatile Object keep;

    public static void main(String[] args) throws Exception {
        Class<?> t = Class.forName("java.lang.JvmpiBciTracker");
        Field on = t.getField("on");
        Field arrays = t.getField("arrays");
        Field objects = t.getField("objects");
        Field last = t.getField("last");
        // Warm up reflection so that reading the counters allocates nothing later.
        for (int i = 0; i < 3; i++) {
            arrays.getInt(null);
            objects.getInt(null);
            last.get(null);
        }
        int o0 = objects.getInt(null);
        on.setBoolean(null, true);
        for (int i = 0; i < 1000; i++) {
            keep = new Object();
        }
        on.setBoolean(null, false);
        System.out.println("objects " + (objects.getInt(null) - o0));
        int a0 = arrays.getInt(null);
        int[] src = {1, 2, 3};
        on.setBoolean(null, true);
        for (int i = 0; i < 1000; i++) {
            keep = Arrays.copyOf(src, 5);
        }
        on.setBoolean(null, false);
        System.out.println("arrays " + (arrays.getInt(null) - a0));
        System.out.println("last-is-the-copy " + (last.get(null) == keep));

        List<String[]> names = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new FileReader(args[0]))) {
            for (String l; (l = r.readLine()) != null; ) {
                names.add(l.split(" "));
            }
        }
        int linked = 0, verify = 0, format = 0, other = 0, absent = 0, shown = 0;
        Map<String, Integer> others = new TreeMap<>();
        for (String[] n : names) {
            Optional<Module> m = ModuleLayer.boot().findModule(n[0]);
            if (!m.isPresent()) {
                absent++;
                continue;
            }
            try {
                Class.forName(n[1].replace('/', '.'), false, m.get().getClassLoader()).getDeclaredMethods();
                linked++;
            } catch (VerifyError e) {
                verify++;
                System.out.println("VERIFY " + n[1] + ": " + e);
            } catch (ClassFormatError e) {
                format++;
                System.out.println("FORMAT " + n[1] + ": " + e);
            } catch (Throwable e) {
                other++;
                others.merge(e.getClass().getName(), 1, Integer::sum);
                if (shown++ < 5) {
                    System.out.println("OTHER " + n[1] + ": " + e);
                }
            }
        }
        System.out.println("summary classes=" + names.size() + " linked=" + linked + " verify=" + verify + " format=" + format
                + " other=" + other + " absent=" + absent);
        for (Map.Entry<String, Integer> e : others.entrySet()) {
            System.out.println("other " + e.getKey() + " " + e.getValue());
        }
    }
}
