// Small scenarios chosen by args[0]: sigquit, exit, systhread, garbage, gcfns.
public class Misc {
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "sigquit":
                Probe.sigquit();
                Probe.sleep(500);
                break;
            case "exit":
                Probe.mark("exiting");
                Probe.profilerExit(7);
                System.out.println("not reached");
                break;
            case "systhread": {
                int rc = Probe.createSystemThread("jvmpi-sys", 10);
                Probe.check(rc == 0, "create-system-thread", rc);
                Probe.sleep(500);
                break;
            }
            case "garbage":
                System.out.println("GARBAGE " + Probe.garbage());
                System.out.println("still alive");
                break;
            case "gcfns": {
                Probe.disableGC();
                Probe.disableGC();
                Probe.enableGC();
                Probe.enableGC();
                Probe.enableGC(); // unmatched: logged
                Probe.mark("rungc");
                Probe.runGC();
                Probe.sleep(800);
                Probe.mark("rungc-done");
                break;
            }
            case "toggle": {
                Probe.check(Probe.disable(42) == 0, "disable-class-load", "");
                Probe.mark("disabled");
                System.out.println("twice=" + Unloadable.twice(21));
                Probe.mark("enabling");
                Probe.check(Probe.enable(42) == 0, "enable-class-load", "");
                Probe.mark("enabled");
                break;
            }
            case "alloc-toggle": {
                Object[] keep = new Object[200];
                for (int i = 0; i < 100; i++) keep[i] = new Counted();
                Probe.check(Probe.disable(4) == 0, "disable-object-alloc", "");
                for (int i = 100; i < 200; i++) keep[i] = new Counted();
                System.out.println("kept " + keep.length);
                break;
            }
            case "hook-alloc": {
                System.out.println("before=" + HookTarget.message());
                Probe.check(Probe.enable(4) == 0, "enable-object-alloc-late", "");
                Object[] keep = new Object[10];
                for (int i = 0; i < keep.length; i++) keep[i] = new Counted();
                System.out.println("after=" + HookTarget.message() + " kept=" + keep.length);
                break;
            }
            default:
                throw new IllegalArgumentException(args[0]);
        }
        System.out.println("done");
    }
}
