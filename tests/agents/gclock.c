/*
 * gclock: a game client's JNI library of the JDK 1.4 era (no JVM_OnLoad): Java calls its
 * natives around a latency-critical section, and they take JVMPI at run time (GetJavaVM, then
 * GetEnv(JVMPI_VERSION_1) on it) to call DisableGC and EnableGC.
 * Java: class GcLockDemo, static natives disableGC() and enableGC() (0, or -1 without JVMPI).
 */
#include <jni.h>
#include <jvmpi.h>

static JVMPI_Interface *jvmpi;

static int ready(JNIEnv *env) {
    if (jvmpi) return 1;
    JavaVM *vm;
    if ((*env)->GetJavaVM(env, &vm) != 0) return 0;
    return (*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) == JNI_OK && jvmpi;
}

JNIEXPORT jint JNICALL Java_GcLockDemo_disableGC(JNIEnv *env, jclass k) {
    (void)k;
    if (!ready(env)) return -1;
    jvmpi->DisableGC();
    return 0;
}

JNIEXPORT jint JNICALL Java_GcLockDemo_enableGC(JNIEnv *env, jclass k) {
    (void)k;
    if (!ready(env)) return -1;
    jvmpi->EnableGC();
    return 0;
}
