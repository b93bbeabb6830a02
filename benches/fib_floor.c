/* The natives of benches/FibFloor.java: count, nothing else (see there). */
#include <jni.h>
static volatile long count;
JNIEXPORT void JNICALL Java_FibFloor_enter(JNIEnv *env, jclass k, jint m) { (void)env; (void)k; (void)m; __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED); }
JNIEXPORT void JNICALL Java_FibFloor_exit(JNIEnv *env, jclass k, jint m) { (void)env; (void)k; (void)m; __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED); }
