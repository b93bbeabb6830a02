/* The emulation floor of benches/FibFloor.java: the natives `enter` and `exit` it calls twice per
 * fib call, doing only what any JVMPI emulation through JNI natives must do for each event (the
 * natives have the shim's signature: a static native taking the method's number), and nothing
 * else (no gate, no thread flags, no in-flight count):
 *   fill a zeroed JVMPI_Event (88 bytes on LP64): event_type, env_id = the JNIEnv the native gets,
 *   method_id read from a jmethodID table by the number the bytecode passes;
 *   call the agent's NotifyEvent through its interface table, re-read every time (the agent may
 *   change it at any moment).
 * The agent is a real JVMPI agent in its own shared library, tests/agents/methodagent.c with its
 * `bench` option (the counting handler the shim's benchmark uses): this library loads it from
 * its own directory, runs its JVM_OnLoad against a JavaVM whose GetEnv answers JVMPI (EnableEvent
 * and DisableEvent succeed, nothing else is there), and sends it JVM_SHUT_DOWN at exit, when it
 * prints its counts. Used by scripts/bench-methods.sh, configuration (i). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <jni.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jvmpi.h"

/* Method number -> jmethodID (the shim's table is filled as methods first run; here at load). */
#define METHODS 4096
static jmethodID ids[METHODS];

static JVMPI_Interface iface;
/* The interface table the natives read NotifyEvent from, every time. */
static JVMPI_Interface *volatile table = &iface;

static jint enable(jint type, void *arg) { (void)type; (void)arg; return JVMPI_SUCCESS; }
static jint fake_get_env(JavaVM *vm, void **penv, jint version) {
    (void)vm;
    if ((version & 0xffff0000) != 0x10000000) return JNI_EVERSION;
    *penv = &iface;
    return JNI_OK;
}
static struct JNIInvokeInterface_ fake_invoke;
static JavaVM fake_vm = &fake_invoke;

/* An event 8 bytes past a multiple of 16, so that its part past the method (bytes 24 to 88) is
 * zeroed with four aligned 16-byte stores; with the three fields, seven stores (the shim's hot
 * path writes its events the same way). gcc makes a plain 88-byte memset `rep stos`, whose
 * start-up alone costs more than the rest of the event. */
typedef long long zero16 __attribute__((vector_size(16)));
_Static_assert(sizeof(JVMPI_Event) == 88, "JVMPI_Event is 88 bytes on LP64");
struct placed { long pad; JVMPI_Event ev; } __attribute__((aligned(16)));

static void send(JNIEnv *env, jint type, jint m) {
    struct placed p;
    zero16 z = {0, 0};
    for (int i = 0; i < 4; i++) __builtin_memcpy((char *)&p.ev + 24 + 16 * i, &z, 16);
    p.ev.event_type = type;
    p.ev.env_id = env;
    p.ev.u.method.method_id = (unsigned)m < METHODS ? ids[m] : NULL;
    void (*f)(JVMPI_Event *) = ((volatile JVMPI_Interface *)table)->NotifyEvent;
    if (f) f(&p.ev);
}

JNIEXPORT void JNICALL Java_FibFloor_enter(JNIEnv *env, jclass k, jint m) { (void)k; send(env, JVMPI_EVENT_METHOD_ENTRY, m); }
JNIEXPORT void JNICALL Java_FibFloor_exit(JNIEnv *env, jclass k, jint m) { (void)k; send(env, JVMPI_EVENT_METHOD_EXIT, m); }

static void shut_down(void) {
    void (*f)(JVMPI_Event *) = ((volatile JVMPI_Interface *)table)->NotifyEvent;
    JVMPI_Event ev;
    memset(&ev, 0, sizeof ev);
    ev.event_type = JVMPI_EVENT_JVM_SHUT_DOWN;
    if (f) f(&ev);
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    (void)reserved;
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_2) != JNI_OK) return JNI_ERR;
    jclass k = (*env)->FindClass(env, "FibFloor");
    if (!k) return JNI_ERR;
    ids[1] = (*env)->GetStaticMethodID(env, k, "fib", "(I)I");
    if (!ids[1]) return JNI_ERR;

    Dl_info self;
    char path[4096];
    /* A static function: a global name may resolve to another library's (JNI_OnLoad does). */
    if (!dladdr((void *)send, &self) || !self.dli_fname) return JNI_ERR;
    snprintf(path, sizeof path, "%s", self.dli_fname);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (slash ? (size_t)(slash + 1 - path) : 0), "libmethodagent.so");
    void *agent = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!agent) { fprintf(stderr, "fib_emul: %s\n", dlerror()); return JNI_ERR; }
    jint (*on_load)(JavaVM *, char *, void *) = (jint(*)(JavaVM *, char *, void *))dlsym(agent, "JVM_OnLoad");
    if (!on_load) return JNI_ERR;

    iface.version = JVMPI_VERSION_1_1;
    iface.EnableEvent = enable;
    iface.DisableEvent = enable;
    fake_invoke.GetEnv = fake_get_env;
    char opts[] = "enable=entry+exit,bench";
    if (on_load(&fake_vm, opts, NULL) != JNI_OK) return JNI_ERR;
    atexit(shut_down);
    return JNI_VERSION_1_2;
}
