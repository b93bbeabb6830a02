/* suite compat: CVM's jlong helpers, for a compiler with a native 64-bit jlong */
#ifndef SUITE_COMPAT_JLONG_H
#define SUITE_COMPAT_JLONG_H
#include <jni.h>
#define jlong_zero ((jlong)0)
#define jint_to_jlong(x) ((jlong)(x))
#define jlong_to_jint(x) ((jint)(x))
#define jlong_low(x) ((jint)(x))
#define jlong_high(x) ((jint)((x) >> 32))
#define jlong_add(x, y) ((x) + (y))
#define jlong_sub(x, y) ((x) - (y))
#define jlong_mul(x, y) ((x) * (y))
#define jlong_div(x, y) ((x) / (y))
#define CVMlongAdd(x, y) ((x) + (y))
#define CVMlongSub(x, y) ((x) - (y))
#define CVMlongGt(x, y) ((x) > (y))
#define CVMlongGe(x, y) ((x) >= (y))
#define CVMlongLt(x, y) ((x) < (y))
#define CVMlongNe(x, y) ((x) != (y))
#define CVMlong2Float(x) ((float)(x))
#endif
