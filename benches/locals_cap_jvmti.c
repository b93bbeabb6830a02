/* A plain JVMTI agent that only takes can_access_local_variables (option "on") or nothing
 * ("off"): what holding that capability costs a program, for scripts/bench-locals.sh. MONITOR_DUMP
 * needs it from JDK 23 on to name a monitor nobody owns whose only waiters are in Object.wait. */
#include <jvmti.h>
#include <stdio.h>
#include <string.h>

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    jvmtiEnv *j;
    jvmtiCapabilities c;
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&j, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
    memset(&c, 0, sizeof c);
    if (options && strcmp(options, "on") == 0) c.can_access_local_variables = 1;
    if ((*j)->AddCapabilities(j, &c) != JVMTI_ERROR_NONE) {
        fprintf(stderr, "locals_cap_jvmti: can_access_local_variables refused\n");
        return JNI_ERR;
    }
    return JNI_OK;
}
