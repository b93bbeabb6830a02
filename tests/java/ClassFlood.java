// A class-loading program for tests/own_frames.rs: defines a class again and again, each time
// with a fresh loader, for the given number of milliseconds (default 3000). Each definition is
// verified and linked (the template's methods are many and branchy, so that linking costs):
// the program's own work is defining classes, and a sampler should see it there.
import java.io.InputStream;

public class ClassFlood {
    static byte[] bytes;

    static class Loader extends ClassLoader {
        Loader() {
            super(ClassFlood.class.getClassLoader());
        }

        Class<?> define() {
            return defineClass("ClassFlood$Heavy", bytes, 0, bytes.length);
        }
    }

    static class Heavy {
        static int m0(int[] a, String s, java.util.List<Object> l) {
            int r = 0;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 0); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 0 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m1(int[] a, String s, java.util.List<Object> l) {
            int r = 1;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 1); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 1 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m2(int[] a, String s, java.util.List<Object> l) {
            int r = 2;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 2); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 2 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m3(int[] a, String s, java.util.List<Object> l) {
            int r = 3;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 3); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 3 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m4(int[] a, String s, java.util.List<Object> l) {
            int r = 4;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 4); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 4 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m5(int[] a, String s, java.util.List<Object> l) {
            int r = 5;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 5); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 5 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m6(int[] a, String s, java.util.List<Object> l) {
            int r = 6;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 6); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 6 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m7(int[] a, String s, java.util.List<Object> l) {
            int r = 7;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 7); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 7 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m8(int[] a, String s, java.util.List<Object> l) {
            int r = 8;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 8); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 8 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m9(int[] a, String s, java.util.List<Object> l) {
            int r = 9;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 9); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 9 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m10(int[] a, String s, java.util.List<Object> l) {
            int r = 10;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 10); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 10 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m11(int[] a, String s, java.util.List<Object> l) {
            int r = 11;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 11); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 11 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m12(int[] a, String s, java.util.List<Object> l) {
            int r = 12;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 12); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 12 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m13(int[] a, String s, java.util.List<Object> l) {
            int r = 13;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 13); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 13 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m14(int[] a, String s, java.util.List<Object> l) {
            int r = 14;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 14); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 14 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m15(int[] a, String s, java.util.List<Object> l) {
            int r = 15;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 15); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 15 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m16(int[] a, String s, java.util.List<Object> l) {
            int r = 16;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 16); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 16 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m17(int[] a, String s, java.util.List<Object> l) {
            int r = 17;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 17); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 17 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m18(int[] a, String s, java.util.List<Object> l) {
            int r = 18;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 18); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 18 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m19(int[] a, String s, java.util.List<Object> l) {
            int r = 19;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 19); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 19 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m20(int[] a, String s, java.util.List<Object> l) {
            int r = 20;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 20); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 20 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m21(int[] a, String s, java.util.List<Object> l) {
            int r = 21;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 21); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 21 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m22(int[] a, String s, java.util.List<Object> l) {
            int r = 22;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 22); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 22 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
        static int m23(int[] a, String s, java.util.List<Object> l) {
            int r = 23;
            for (int k = 0; k < a.length; k++) {
                switch ((a[k] + k) % 5) {
                    case 0: r += a[k]; break;
                    case 1: r ^= s.length() + k; break;
                    case 2: try { r /= (a[k] - 23); } catch (ArithmeticException e) { r = -r; } break;
                    case 3: if (l.size() > k && l.get(k) instanceof String) { r += ((String) l.get(k)).length(); } break;
                    default: r = r * 31 + (k > 23 ? 1 : 2);
                }
                while (r > 1000000) { r >>= 1; }
            }
            StringBuilder b = new StringBuilder(s);
            for (Object o : l) { if (o != null) b.append(o.hashCode() % 7); }
            return r + b.length();
        }
    }

    public static void main(String[] args) throws Exception {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 3000;
        try (InputStream in = ClassFlood.class.getResourceAsStream("/ClassFlood$Heavy.class")) {
            bytes = in.readAllBytes();
        }
        long end = System.nanoTime() + ms * 1_000_000L;
        int n = 0;
        while (System.nanoTime() < end) {
            Class<?> c = new Loader().define();
            if (c.getName().length() > 0) {
                n++;
            }
        }
        System.out.println("DEFINED " + (n > 100 ? "many" : "few " + n));
        System.err.println("classes defined: " + n);
    }
}
