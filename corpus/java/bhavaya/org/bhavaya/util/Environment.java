package org.bhavaya.util;

/**
 * The suite's stand-in for Bhavaya's org.bhavaya.util.Environment: at the pinned commit the
 * Java class no longer declares its natives (they are commented out), while the C library still
 * exports Java_org_bhavaya_util_Environment_nativeRequestThreadDump. This declares that one
 * native, as the commented-out line did, and loads the library (libEnvironment.so).
 */
public final class Environment {
    static {
        System.loadLibrary("Environment");
    }

    private Environment() {
    }

    public static native void nativeRequestThreadDump(StringBuffer buf);
}
