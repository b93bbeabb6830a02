// CLASS_LOAD_HOOK rewrites the constant below when the test agent is told to.
public class HookTarget {
    public static String message() {
        return "ORIGINAL";
    }
}
