/* The natives of benches/FibFloor.java (JNI) and the downcall targets of benches/FibFfm.java
 * (foreign-function API): count, nothing else (see there). */
#include <jni.h>
static volatile long count;
JNIEXPORT void JNICALL Java_FibFloor_enter(JNIEnv *env, jclass k, jint m) { (void)env; (void)k; (void)m; __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED); }
JNIEXPORT void JNICALL Java_FibFloor_exit(JNIEnv *env, jclass k, jint m) { (void)env; (void)k; (void)m; __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED); }
JNIEXPORT void fib_floor_enter(jint m) { (void)m; __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED); }
JNIEXPORT void fib_floor_exit(jint m) { (void)m; __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED); }
