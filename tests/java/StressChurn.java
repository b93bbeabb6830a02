// Defined again and again by throw-away class loaders in Stress (class load and unload churn).
public class StressChurn implements Runnable {
    private final int[] data = new int[16];

    public void run() {
        for (int i = 0; i < data.length; i++) data[i] = i * 31;
    }
}
