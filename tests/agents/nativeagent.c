/*
 * nativeagent: a legacy JVMPI agent whose library also implements the JNI natives of a Java
 * helper class (tests/java/NativeHelper.java), the way old tools shipped them: the class
 * declares `native` methods, the agent exports `Java_NativeHelper_...`, and nobody calls
 * System.loadLibrary. The JVMs of JDK 1.2-1.5 found such natives in -Xrun libraries; through
 * jvmpi-shim the shim binds them.
 *
 * Options (after the shim's "agent=<lib>:"):
 *   preload   in JVM_OnLoad, load (and so link and initialise) class NativeHelper with JNI
 *             FindClass, so that it is prepared before the shim's event gate opens
 */
#include <jni.h>
#include <jvmpi.h>
#include <stdio.h>
#include <string.h>

static JVMPI_Interface *jvmpi;
static volatile int init_done;

static void notify(JVMPI_Event *ev) {
    if ((ev->event_type & ~JVMPI_REQUESTED_EVENT) == JVMPI_EVENT_JVM_INIT_DONE) init_done = 1;
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK || jvmpi == NULL) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    if (jvmpi->EnableEvent(JVMPI_EVENT_JVM_INIT_DONE, NULL) != JVMPI_SUCCESS) return JNI_ERR;
    if (options != NULL && strstr(options, "preload") != NULL) {
        JNIEnv *env = NULL;
        if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_2) != JNI_OK || env == NULL) return JNI_ERR;
        jclass k = (*env)->FindClass(env, "NativeHelper");
        if (k == NULL) {
            (*env)->ExceptionDescribe(env);
            return JNI_ERR;
        }
        (*env)->DeleteLocalRef(env, k);
        printf("nativeagent: NativeHelper loaded in JVM_OnLoad\n");
        fflush(stdout);
    }
    return JNI_OK;
}

/* static native long cpuTime(): the short name. */
JNIEXPORT jlong JNICALL Java_NativeHelper_cpuTime(JNIEnv *env, jclass c) {
    (void)env; (void)c;
    return jvmpi->GetCurrentThreadCpuTime();
}

/* static native int twice(int) and static native String twice(String): overloaded, so only
 * the long names (with the mangled argument descriptor) tell them apart. */
JNIEXPORT jint JNICALL Java_NativeHelper_twice__I(JNIEnv *env, jclass c, jint x) {
    (void)env; (void)c;
    return 2 * x;
}

JNIEXPORT jstring JNICALL Java_NativeHelper_twice__Ljava_lang_String_2(JNIEnv *env, jclass c, jstring s) {
    char buf[256];
    const char *u = (*env)->GetStringUTFChars(env, s, NULL);
    (void)c;
    snprintf(buf, sizeof buf, "%s%s", u, u);
    (*env)->ReleaseStringUTFChars(env, s, u);
    return (*env)->NewStringUTF(env, buf);
}

/* static native long sum(int[]) and sum(long[]): long names with array descriptors ("_3"). */
JNIEXPORT jlong JNICALL Java_NativeHelper_sum___3I(JNIEnv *env, jclass c, jintArray a) {
    jsize i, n = (*env)->GetArrayLength(env, a);
    jint *p = (*env)->GetIntArrayElements(env, a, NULL);
    jlong s = 0;
    (void)c;
    for (i = 0; i < n; i++) s += p[i];
    (*env)->ReleaseIntArrayElements(env, a, p, JNI_ABORT);
    return s;
}

JNIEXPORT jlong JNICALL Java_NativeHelper_sum___3J(JNIEnv *env, jclass c, jlongArray a) {
    jsize i, n = (*env)->GetArrayLength(env, a);
    jlong *p = (*env)->GetLongArrayElements(env, a, NULL);
    jlong s = 0;
    (void)c;
    for (i = 0; i < n; i++) s += 1000 * p[i];
    (*env)->ReleaseLongArrayElements(env, a, p, JNI_ABORT);
    return s;
}

/* static native String agent_name(): an underscore in the method name ("_1"). */
JNIEXPORT jstring JNICALL Java_NativeHelper_agent_1name(JNIEnv *env, jclass c) {
    (void)c;
    return (*env)->NewStringUTF(env, init_done ? "nativeagent(init done)" : "nativeagent(no init yet)");
}

/* static native int which(int): both names exported; the JVM looks for the short one first. */
JNIEXPORT jint JNICALL Java_NativeHelper_which(JNIEnv *env, jclass c, jint x) {
    (void)env; (void)c; (void)x;
    return 1;
}

JNIEXPORT jint JNICALL Java_NativeHelper_which__I(JNIEnv *env, jclass c, jint x) {
    (void)env; (void)c; (void)x;
    return 2;
}

/* native int plus(int): an instance method. */
JNIEXPORT jint JNICALL Java_NativeHelper_plus(JNIEnv *env, jobject self, jint x) {
    jclass k = (*env)->GetObjectClass(env, self);
    jfieldID f = (*env)->GetFieldID(env, k, "base", "I");
    return (*env)->GetIntField(env, self, f) + x;
}

/* static native int nine() of the nested class NativeHelper$Inner ('$' is "_00024"). */
JNIEXPORT jint JNICALL Java_NativeHelper_00024Inner_nine(JNIEnv *env, jclass c) {
    (void)env; (void)c;
    return 9;
}
