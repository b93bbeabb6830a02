package bci;

/**
 * Compile-time stand-in for the counting tracker of tests/bci.rs: the test replaces this class
 * file with the one {@code jvmpi_shim::bci::tracker_class_counting("bci/CountingTracker")}
 * generates (same members; newArray/objectInit count while {@code on}).
 */
public final class CountingTracker {
    public static volatile boolean on;
    public static int objects, arrays, news;
    public static Object last;

    public static void objectInit(Object o) {}

    public static void newArray(Object a) {}
}
