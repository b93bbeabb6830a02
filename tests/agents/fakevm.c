/*
 * fakevm: a "JVM with native JVMPI" for the shim's own JVM_OnLoad (the double agent), built as an
 * executable by tests/loading.rs (not by the harness's agent()).
 *
 *   fakevm <path of libjvmpi_shim.so> <shim options>
 *
 * It builds a JavaVM whose GetEnv knows no JVMTI (JNI_EVERSION for every JVMTI version, as
 * JDK 1.2-1.4 did) and answers JVMPI_VERSION_1 with its own JVMPI_Interface (version field set;
 * EnableEvent/DisableEvent print what they were asked), dlopens the shim, calls its
 * JVM_OnLoad(vm, options, NULL) and prints "JVM_OnLoad rc=<n>". Every fake function prints a line
 * starting with "fake ", so a test can see what the shim or the agent called.
 */
#include <dlfcn.h>
#include <jni.h>
#include <jvmpi.h>
#include <stdio.h>
#include <string.h>

static JVMPI_Interface fake_jvmpi;

static jint JNICALL fake_destroy(JavaVM *vm) {
    (void)vm;
    printf("fake DestroyJavaVM\n");
    return JNI_ERR;
}
static jint JNICALL fake_attach(JavaVM *vm, void **penv, void *args) {
    (void)vm; (void)args;
    printf("fake AttachCurrentThread\n");
    if (penv) *penv = NULL;
    return JNI_ERR;
}
static jint JNICALL fake_detach(JavaVM *vm) {
    (void)vm;
    printf("fake DetachCurrentThread\n");
    return JNI_ERR;
}
static jint JNICALL fake_attach_daemon(JavaVM *vm, void **penv, void *args) {
    (void)vm; (void)args;
    printf("fake AttachCurrentThreadAsDaemon\n");
    if (penv) *penv = NULL;
    return JNI_ERR;
}
static jint JNICALL fake_get_env(JavaVM *vm, void **penv, jint version) {
    (void)vm;
    printf("fake GetEnv(%#x)\n", (unsigned)version);
    if (penv == NULL) return JNI_ERR;
    *penv = NULL;
    if (version == JVMPI_VERSION_1) {
        *penv = &fake_jvmpi;
        return JNI_OK;
    }
    /* JVMTI (0x30000000 interface bits), JNI and anything else: unknown to this JVM. */
    return JNI_EVERSION;
}

static jint fake_enable(jint event, void *arg) {
    (void)arg;
    printf("fake EnableEvent(%d)\n", (int)event);
    return JVMPI_SUCCESS;
}
static jint fake_disable(jint event, void *arg) {
    (void)arg;
    printf("fake DisableEvent(%d)\n", (int)event);
    return JVMPI_SUCCESS;
}

static const struct JNIInvokeInterface_ fake_invoke = {
    NULL, NULL, NULL, fake_destroy, fake_attach, fake_detach, fake_get_env, fake_attach_daemon,
};

int main(int argc, char **argv) {
    JavaVM vm = &fake_invoke;
    void *shim;
    jint (JNICALL *onload)(JavaVM *, char *, void *);
    jint rc;
    if (argc != 3) {
        fprintf(stderr, "usage: fakevm <libjvmpi_shim.so> <options>\n");
        return 2;
    }
    memset(&fake_jvmpi, 0, sizeof fake_jvmpi);
    fake_jvmpi.version = JVMPI_VERSION_1;
    fake_jvmpi.EnableEvent = fake_enable;
    fake_jvmpi.DisableEvent = fake_disable;
    setvbuf(stdout, NULL, _IONBF, 0);
    shim = dlopen(argv[1], RTLD_LAZY);
    if (shim == NULL) {
        fprintf(stderr, "fakevm: dlopen: %s\n", dlerror());
        return 2;
    }
    *(void **)&onload = dlsym(shim, "JVM_OnLoad");
    if (onload == NULL) {
        fprintf(stderr, "fakevm: no JVM_OnLoad in %s\n", argv[1]);
        return 2;
    }
    rc = onload(&vm, argv[2], NULL);
    printf("JVM_OnLoad rc=%d\n", (int)rc);
    return 0;
}
