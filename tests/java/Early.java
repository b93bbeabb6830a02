// CLASS_LOAD_HOOK for classes loaded before the agent started. java.lang.Thread is loaded long
// before any agent runs; the test agent can patch its "Thread-" constant, which shows in the
// default name of every new thread. Allocation tracking switched on and off in between
// retransforms every class, which must not lose the agent's change.
//   (no args)  the names and Boolean.toString
//   toggle     OBJECT_ALLOC enabled, then disabled, a name after each
//   tracked    (OBJECT_ALLOC enabled by the agent) 10 Counted, disable, enable, 5 Counted
public class Early {
    static String name() {
        return new Thread().getName();
    }

    public static void main(String[] args) {
        String mode = args.length > 0 ? args[0] : "";
        System.out.println("name " + name());
        if (mode.equals("toggle")) {
            Probe.check(Probe.enable(4) == 0, "enable-object-alloc", "");
            System.out.println("name-on " + name());
            Probe.check(Probe.disable(4) == 0, "disable-object-alloc", "");
            System.out.println("name-off " + name());
        } else if (mode.equals("tracked")) {
            Object[] keep = new Object[15];
            for (int i = 0; i < 10; i++) keep[i] = new Counted();
            Probe.check(Probe.disable(4) == 0, "disable-object-alloc", "");
            System.out.println("name-off " + name());
            Probe.check(Probe.enable(4) == 0, "enable-object-alloc", "");
            for (int i = 10; i < 15; i++) keep[i] = new Counted();
            System.out.println("name-on " + name() + " kept=" + keep.length);
        }
        System.out.println("boolean " + Boolean.toString(true) + " " + Boolean.valueOf(false) + " " + Boolean.parseBoolean("TRUE"));
    }
}
