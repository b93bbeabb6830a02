/*
 * selfload: an agent written like the profilers of application toolkits (a JVMPI agent whose
 * library is also the application's JNI library): its JVM_OnLoad only takes the JVMPI
 * interface and keeps it — no event, no NotifyEvent — and the application loads the same file
 * again with System.loadLibrary and calls its natives, which use what JVM_OnLoad kept
 * (GetCurrentThreadCpuTime). One instance: JNI_OnLoad, run by System.loadLibrary, and the
 * natives see JVM_OnLoad's globals.
 * Java: class SelfLoad, natives onloadRan() (1 if JVM_OnLoad ran in this instance, and the
 * options it got matched), jniOnloadSawIt() (what JNI_OnLoad found), cpuTime() (JVMPI's
 * GetCurrentThreadCpuTime, -1 without the interface), getEnvAgain() (GetEnv(JVMPI_VERSION_1)
 * through GetJavaVM from a native of the agent's own library, at run time: 1 if it gives the
 * interface JVM_OnLoad got).
 */
#include <jni.h>
#include <jvmpi.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static int onload_ran;
static int jni_onload_saw;

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    /* One event on (it never comes here: no NotifyEvent), so that a GetEnv that re-initialised
     * the interface would have something to disable, and say so. */
    jvmpi->EnableEvent(JVMPI_EVENT_DATA_DUMP_REQUEST, NULL);
    onload_ran = options && strcmp(options, "selftest") == 0 ? 1 : 2;
    return JNI_OK;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    (void)vm;
    (void)reserved;
    jni_onload_saw = onload_ran;
    return JNI_VERSION_1_2;
}

JNIEXPORT jint JNICALL Java_SelfLoad_onloadRan(JNIEnv *env, jclass k) {
    (void)env;
    (void)k;
    return onload_ran;
}

JNIEXPORT jint JNICALL Java_SelfLoad_jniOnloadSawIt(JNIEnv *env, jclass k) {
    (void)env;
    (void)k;
    return jni_onload_saw;
}

JNIEXPORT jlong JNICALL Java_SelfLoad_cpuTime(JNIEnv *env, jclass k) {
    (void)env;
    (void)k;
    return jvmpi ? jvmpi->GetCurrentThreadCpuTime() : -1;
}

JNIEXPORT jint JNICALL Java_SelfLoad_getEnvAgain(JNIEnv *env, jclass k) {
    JavaVM *vm;
    void *p = NULL;
    (void)k;
    if ((*env)->GetJavaVM(env, &vm) != 0) return 0;
    return (*vm)->GetEnv(vm, &p, JVMPI_VERSION_1) == JNI_OK && p == (void *)jvmpi;
}
