package bci;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Loads and links rewritten classes with the verifier on (run it with -Xverify:all), for
 * tests/bci.rs.
 *
 * <p>Input: a file of records writeUTF(internal name), writeBoolean(target), writeInt(length),
 * bytes, and for a target writeInt(length), the original bytes (length 0: none). Every target
 * whose package is not java.* is defined in a fresh class loader of its own and linked
 * ({@code getDeclaredMethods} links the class in HotSpot, which verifies it). The
 * loader's parent is the platform class loader (then the application class loader, for JDK
 * modules defined to it); classes of the target's own package that are in the input are defined
 * by the fresh loader itself, so that package-private supertypes resolve in the same runtime
 * package. The tracker class is available to every loader.
 *
 * <p>A class that fails verification is linked again from its original bytes (its package's
 * classes original too): if the original fails the same way — same error, same method, same
 * reason — the class cannot be verified outside its own loader (e.g. a method returns a subclass
 * that the parent loader defined, which is not a subclass of this loader's copy), the failure is
 * not the rewriting's and is counted as {@code baseline}.
 *
 * <p>Output: {@code VERIFY <name>: <error>} / {@code FORMAT <name>: <error>} for each
 * VerifyError / ClassFormatError of a rewritten class whose original links,
 * {@code BASELINE <name>: <error>} when the original fails too, {@code OTHER <name>: <error>}
 * for the first few other failures, and a summary line
 * {@code summary targets=.. linked=.. verify=.. format=.. baseline=.. other=.. skipped=..}
 * followed by {@code other <error class> <count>} lines.
 */
public class VerifyDriver {
    static Map<String, byte[]> classes = new HashMap<>();
    static Map<String, byte[]> originals = new HashMap<>();
    static String trackerName;
    static byte[] trackerBytes;

    static String packageOf(String internal) {
        int i = internal.lastIndexOf('/');
        return i < 0 ? "" : internal.substring(0, i);
    }

    static final class Loader extends ClassLoader {
        final String pkg;
        final boolean original;

        Loader(String pkg, boolean original) {
            super("bci-verify", ClassLoader.getPlatformClassLoader());
            this.pkg = pkg;
            this.original = original;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    String internal = name.replace('.', '/');
                    byte[] b = null;
                    if (internal.equals(trackerName)) {
                        b = trackerBytes;
                    } else if (packageOf(internal).equals(pkg) && !internal.startsWith("java/")) {
                        b = original ? originals.getOrDefault(internal, classes.get(internal)) : classes.get(internal);
                    }
                    if (b != null) {
                        c = defineClass(name, b, 0, b.length);
                    } else {
                        try {
                            c = getParent().loadClass(name);
                        } catch (ClassNotFoundException e) {
                            c = ClassLoader.getSystemClassLoader().loadClass(name);
                        }
                    }
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }
    }

    static void link(String name, boolean original) throws ClassNotFoundException {
        Class<?> c = new Loader(packageOf(name), original).loadClass(name.replace('/', '.'));
        c.getDeclaredMethods();
    }

    /**
     * The first line, the method of "Location:" and the "Reason:" of a VerifyError's message.
     * Numbers in the first line (bytecode offsets, which the rewriting shifts) are left out.
     */
    static String where(Throwable t) {
        String[] lines = String.valueOf(t.getMessage()).split("\n");
        StringBuilder sb = new StringBuilder(lines[0].replaceAll("[0-9]+", "#"));
        for (int i = 0; i + 1 < lines.length; i++) {
            String l = lines[i].trim();
            String next = lines[i + 1].trim();
            if (l.equals("Location:")) {
                int at = next.indexOf(" @");
                sb.append(" | ").append(at < 0 ? next : next.substring(0, at));
            } else if (l.equals("Reason:")) {
                sb.append(" | ").append(next);
            }
        }
        return sb.toString();
    }

    static String firstLine(Throwable t) {
        String s = String.valueOf(t);
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    public static void main(String[] args) throws Exception {
        List<String> targets = new ArrayList<>();
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(args[0]), 1 << 20))) {
            while (true) {
                String name;
                try {
                    name = in.readUTF();
                } catch (EOFException e) {
                    break;
                }
                boolean target = in.readBoolean();
                byte[] b = new byte[in.readInt()];
                in.readFully(b);
                classes.put(name, b);
                if (target) {
                    targets.add(name);
                    byte[] o = new byte[in.readInt()];
                    in.readFully(o);
                    if (o.length > 0) {
                        originals.put(name, o);
                    }
                }
            }
        }
        trackerName = args[1];
        trackerBytes = classes.get(trackerName);
        int linked = 0, verify = 0, format = 0, baseline = 0, other = 0, skipped = 0, shown = 0;
        Map<String, Integer> others = new TreeMap<>();
        for (String name : targets) {
            if (name.startsWith("java/") || name.endsWith("module-info")) {
                skipped++;
                continue;
            }
            try {
                link(name, false);
                linked++;
            } catch (VerifyError | ClassFormatError e) {
                Throwable o = null;
                try {
                    if (originals.containsKey(name)) {
                        link(name, true);
                    }
                } catch (Throwable t) {
                    o = t;
                }
                if (o != null && o.getClass() == e.getClass() && where(o).equals(where(e))) {
                    baseline++;
                    System.out.println("BASELINE " + name + ": " + firstLine(e) + " / original: " + firstLine(o));
                } else if (e instanceof VerifyError) {
                    verify++;
                    System.out.println("VERIFY " + name + ": " + e);
                } else {
                    format++;
                    System.out.println("FORMAT " + name + ": " + e);
                }
            } catch (Throwable e) {
                other++;
                others.merge(e.getClass().getName(), 1, Integer::sum);
                if (shown++ < 5) {
                    System.out.println("OTHER " + name + ": " + e);
                }
            }
        }
        System.out.println("summary targets=" + targets.size() + " linked=" + linked + " verify=" + verify + " format=" + format
                + " baseline=" + baseline + " other=" + other + " skipped=" + skipped);
        for (Map.Entry<String, Integer> e : others.entrySet()) {
            System.out.println("other " + e.getKey() + " " + e.getValue());
        }
    }
}
