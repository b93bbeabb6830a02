/* A plain JVMTI agent for the harness self-test: it only proves that the harness can build a C
 * agent against the JDK headers and that the JVM loads it. Its options are a file path; it
 * appends "loaded <options>" there, and "vminit" when the VM is initialized. */
#include <jvmti.h>
#include <stdio.h>
#include <string.h>

static char log_path[4096];

static void append(const char *line) {
    FILE *f = fopen(log_path, "a");
    if (f != NULL) {
        fprintf(f, "%s\n", line);
        fclose(f);
    }
}

static void JNICALL vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread) {
    (void)jvmti; (void)jni; (void)thread;
    append("vminit");
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)reserved;
    if (options == NULL || options[0] == '\0') {
        fprintf(stderr, "noop_jvmti: options must be a log file path\n");
        return JNI_ERR;
    }
    snprintf(log_path, sizeof log_path, "%s", options);
    char line[4200];
    snprintf(line, sizeof line, "loaded %s", options);
    append(line);

    jvmtiEnv *jvmti = NULL;
    if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK || jvmti == NULL) {
        append("no jvmti");
        return JNI_ERR;
    }
    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.VMInit = vm_init;
    if ((*jvmti)->SetEventCallbacks(jvmti, &cb, (jint)sizeof cb) != JVMTI_ERROR_NONE ||
        (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL) != JVMTI_ERROR_NONE) {
        append("jvmti setup failed");
        return JNI_ERR;
    }
    return JNI_OK;
}
