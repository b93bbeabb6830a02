/* A legacy-style JVMPI agent for the call-trace benchmark (benches/TraceBench.java): implements
 * TraceBench.probe() (the shim binds the agent library's Java_… functions, as HotSpot did),
 * which with option "trace" takes the current thread's stack with GetCallTrace(depth 4) —
 * frames carry their line numbers — and with "empty" does nothing (the floor). Enables no event.
 * Returns a checksum: frames * 100000 + the sum of the lines. */
#include <jni.h>
#include <jvmpi.h>
#include <string.h>

#define DEPTH 4
static JVMPI_Interface *jvmpi;
static int trace = 1;

JNIEXPORT jint JNICALL Java_TraceBench_probe(JNIEnv *env, jclass c) {
    JVMPI_CallFrame f[DEPTH];
    JVMPI_CallTrace t;
    jint sum = 0;
    if (!trace) return 0;
    t.env_id = env;
    t.frames = f;
    t.num_frames = 0;
    jvmpi->GetCallTrace(&t, DEPTH);
    for (jint i = 0; i < t.num_frames; i++) sum += f[i].lineno;
    return t.num_frames * 100000 + sum;
}

static void notify(JVMPI_Event *e) { (void)e; }

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    trace = !(options && !strcmp(options, "empty"));
    return JNI_OK;
}
