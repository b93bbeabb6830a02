/* The suite's do-nothing JVMPI agent: takes JVMPI, sets a NotifyEvent that ignores every
 * event, enables nothing. Loaded as "agent=" next to tools that are plain JNI libraries (they
 * take JVMPI themselves at run time), for shims that need an agent named. */
#include <jni.h>
#include <jvmpi.h>

static void ignore(JVMPI_Event *event) { (void)event; }

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    JVMPI_Interface *jvmpi;
    (void)options;
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = ignore;
    return JNI_OK;
}
