package com.samskivert.util;

/** The suite's stand-in for samskivert's RunAnywhere (the parts nenya's Unsafe calls). */
public final class RunAnywhere {
    private static final String OS = System.getProperty("os.name", "");

    private RunAnywhere() {
    }

    public static boolean isLinux() {
        return OS.startsWith("Linux");
    }

    public static boolean isWindows() {
        return OS.startsWith("Windows");
    }
}
