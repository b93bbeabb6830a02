/** Harness self-test program. No args: prints "hello". Args (any order):
 *  "exit N"   exit with status N after printing;
 *  "sleep MS" sleep MS milliseconds first;
 *  "err TEXT" also print TEXT to stderr;
 *  "write PATH TEXT" append the line TEXT to file PATH. */
public class Hello {
    public static void main(String[] args) throws Exception {
        int exit = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "exit": exit = Integer.parseInt(args[++i]); break;
                case "sleep": Thread.sleep(Long.parseLong(args[++i])); break;
                case "err": System.err.println(args[++i]); break;
                case "write": {
                    String path = args[++i];
                    String text = args[++i];
                    try (java.io.FileWriter w = new java.io.FileWriter(path, true)) {
                        w.write(text + "\n");
                    }
                    break;
                }
                default: throw new IllegalArgumentException("unknown arg " + args[i]);
            }
        }
        System.out.println("hello");
        System.out.flush();
        if (exit != 0) System.exit(exit);
    }
}
