/* The floor for giving every allocation an ID with plain JVMTI: SampledObjectAlloc with a
 * sampling interval of 0 (every allocation the JVM samples) and SetTag on each; counts frees.
 * Prints its counts and the process's peak RSS at VM death. */
#include <jvmti.h>
#include <stdio.h>
#include <string.h>

static volatile long allocs, frees, next_tag;

static void JNICALL sampled(jvmtiEnv *j, JNIEnv *env, jthread t, jobject o, jclass k, jlong size) {
    (*j)->SetTag(j, o, __sync_add_and_fetch(&next_tag, 1));
    __sync_add_and_fetch(&allocs, 1);
}
static void JNICALL freed(jvmtiEnv *j, jlong tag) { __sync_add_and_fetch(&frees, 1); }
static long peak_rss_kb(void) {
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) sscanf(line + 6, "%ld", &kb);
    if (f) fclose(f);
    return kb;
}
static void JNICALL death(jvmtiEnv *j, JNIEnv *env) {
    printf("agent: allocs=%ld frees=%ld peak_rss_kb=%ld\n", allocs, frees, peak_rss_kb());
    fflush(stdout);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    jvmtiEnv *j;
    jvmtiCapabilities c;
    jvmtiEventCallbacks cb;
    if ((*vm)->GetEnv(vm, (void **)&j, JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
    memset(&c, 0, sizeof c);
    c.can_tag_objects = 1;
    c.can_generate_sampled_object_alloc_events = 1;
    c.can_generate_object_free_events = 1;
    if ((*j)->AddCapabilities(j, &c) != JVMTI_ERROR_NONE) return JNI_ERR;
    memset(&cb, 0, sizeof cb);
    cb.SampledObjectAlloc = sampled;
    cb.ObjectFree = freed;
    cb.VMDeath = death;
    (*j)->SetEventCallbacks(j, &cb, sizeof cb);
    (*j)->SetHeapSamplingInterval(j, 0);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, NULL);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_OBJECT_FREE, NULL);
    (*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
    return JNI_OK;
}
