import com.sun.tools.attach.VirtualMachine;

/** Loads the shim into a running JVM, as `jcmd <pid> JVMTI.agent_load <lib> <options>` does:
 *  `AttachTool <pid> <library> <options>`. Prints "ATTACHED" or "ATTACH_FAILED <message>". */
public class AttachTool {
    public static void main(String[] args) throws Exception {
        VirtualMachine vm = VirtualMachine.attach(args[0]);
        try {
            vm.loadAgentPath(args[1], args.length > 2 ? args[2] : null);
            System.out.println("ATTACHED");
        } catch (Exception e) {
            System.out.println("ATTACH_FAILED " + e);
        } finally {
            vm.detach();
        }
    }
}
