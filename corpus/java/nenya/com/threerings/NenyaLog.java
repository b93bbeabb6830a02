package com.threerings;

/** The suite's stand-in for nenya's logger: messages go to stderr. */
public final class NenyaLog {
    public static final Logger log = new Logger();

    private NenyaLog() {
    }

    public static final class Logger {
        public void info(Object msg, Object... args) {
            System.err.println("INFO " + msg + " " + java.util.Arrays.toString(args));
        }

        public void warning(Object msg, Object... args) {
            System.err.println("WARNING " + msg + " " + java.util.Arrays.toString(args));
        }
    }
}
