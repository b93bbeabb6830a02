// Loaded by Unload through a throwaway class loader, then unloaded.
public class Unloadable {
    public static int twice(int x) {
        return 2 * x;
    }
}
