/* The native of benches/InsnFloor.java: count, nothing else (see there). */
#include <jni.h>
static volatile long count;
JNIEXPORT void JNICALL Java_InsnFloor_n(JNIEnv *env, jclass k, jint m, jint off) { (void)env; (void)k; (void)m; (void)off; __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED); }
