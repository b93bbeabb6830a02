// Sends SIGUSR1 to its own JVM twice: each asks the agent for DATA_RESET_REQUEST.
public class ResetSignal {
    public static void main(String[] args) throws Exception {
        long pid = ProcessHandle.current().pid();
        for (int i = 0; i < 2; i++) {
            new ProcessBuilder("kill", "-USR1", Long.toString(pid)).inheritIO().start().waitFor();
            Thread.sleep(300);
        }
        System.out.println("done");
    }
}
