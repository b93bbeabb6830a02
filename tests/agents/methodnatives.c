/*
 * methodnatives: the program's own JNI library for tests/methods.rs (MethodsProg, mode
 * "natives"), loaded with System.load: one native found by its JNI name, one registered with
 * RegisterNatives in JNI_OnLoad, one that throws. Two of them call back into Java.
 */
#include <jni.h>

JNIEXPORT jint JNICALL Java_MethodsProg_nativeFib(JNIEnv *env, jclass k, jint n) {
    jmethodID fib = (*env)->GetStaticMethodID(env, k, "fib", "(I)I");
    return fib ? (*env)->CallStaticIntMethod(env, k, fib, n) : -1000;
}

static jint twice(JNIEnv *env, jobject self) {
    jclass k = (*env)->GetObjectClass(env, self);
    jmethodID m = (*env)->GetMethodID(env, k, "twice", "()I");
    return m ? (*env)->CallIntMethod(env, self, m) : -1000;
}

JNIEXPORT jint JNICALL Java_MethodsProg_nativeThrow(JNIEnv *env, jclass k, jint n) {
    (void)k;
    jclass e = (*env)->FindClass(env, "java/lang/IllegalStateException");
    if (e) (*env)->ThrowNew(env, e, "thrown by a native method");
    return n;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    (void)reserved;
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_6) != JNI_OK) return JNI_ERR;
    jclass k = (*env)->FindClass(env, "MethodsProg");
    if (!k) return JNI_ERR;
    JNINativeMethod m = { "nativeTwice", "()I", (void *)twice };
    if ((*env)->RegisterNatives(env, k, &m, 1) != 0) return JNI_ERR;
    return JNI_VERSION_1_6;
}
