/*
 * jvmpi.h -- Java Virtual Machine Profiler Interface (JVMPI), versions 1, 1.1
 * and 1.2.
 *
 * Part of jvmpi-shim, which runs legacy JVMPI profiler agents (libraries that
 * export JVM_OnLoad and were written for JDK 1.2-1.5) on current JVMs by
 * emulating JVMPI on top of JVMTI.
 *
 * This header is a drop-in replacement for the jvmpi.h that shipped with those
 * JDKs: legacy agents compile against it unmodified, as C or C++.  Every
 * constant has its original value, and every structure, union member and
 * JVMPI_Interface slot has the original order, types, sizes and offsets
 * (tests/abi_layout.rs checks them against measurements of the original
 * header on x86_64), so agents built against either header are binary
 * compatible with the shim.
 *
 * Notes:
 *  - Function pointers carry no calling-convention annotation, exactly as in
 *    the original (the VM and the agent call each other with the platform's
 *    default C convention).
 *  - String members are plain `char *`, as in the JDK 1.2 specification; the
 *    VM owns the strings and an agent must treat them as read-only.
 *  - JVM_OnLoad is deliberately not declared here: each agent defines it
 *    itself, as `JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *, char *, void *)`.
 */

#ifndef _JAVASOFT_JVMPI_H_
#define _JAVASOFT_JVMPI_H_

#include <jni.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Interface versions, passed to JavaVM::GetEnv.
 * ------------------------------------------------------------------------ */

#define JVMPI_VERSION_1   ((jint)0x10000001)  /* implied 0 for minor version */
#define JVMPI_VERSION_1_1 ((jint)0x10000002)  /* adds jobjectID2jobject, jobject2jobjectID */
#define JVMPI_VERSION_1_2 ((jint)0x10000003)  /* adds SuspendThreadList, ResumeThreadList */

/* Type of the function run by CreateSystemThread. */
typedef void (*jvmpi_void_function_of_void)(void *);

/* ------------------------------------------------------------------------
 * Identifier types.
 * ------------------------------------------------------------------------ */

/* Object IDs (also used for class IDs and thread object IDs). */
struct _jobjectID;
typedef struct _jobjectID * jobjectID;

/* Raw monitors. */
struct _JVMPI_RawMonitor;
typedef struct _JVMPI_RawMonitor * JVMPI_RawMonitor;

/* ------------------------------------------------------------------------
 * Data structures.
 * ------------------------------------------------------------------------ */

/* One frame of a call trace. */
typedef struct {
    jint lineno;                    /* source line; -1 unknown, -2 compiled, -3 native */
    jmethodID method_id;            /* method executing in this frame */
} JVMPI_CallFrame;

/* A call trace: callee first, followed by its callers. */
typedef struct {
    JNIEnv *env_id;                 /* thread the trace belongs to */
    jint num_frames;                /* number of frames filled in */
    JVMPI_CallFrame *frames;        /* frames, allocated by the agent */
} JVMPI_CallTrace;

/* A method defined in a class. */
typedef struct {
    char *method_name;              /* name of the method */
    char *method_signature;         /* JVM signature of the method */
    jint start_lineno;              /* first source line (-1 if native, abstract ...) */
    jint end_lineno;                /* last source line (-1 if native, abstract ...) */
    jmethodID method_id;            /* ID of the method */
} JVMPI_Method;

/* A field defined in a class. */
typedef struct {
    char *field_name;               /* name of the field */
    char *field_signature;          /* JVM signature of the field */
} JVMPI_Field;

/* Line number information of a compiled method. */
typedef struct {
    jint offset;                    /* offset from the start of the method's code */
    jint lineno;                    /* source line */
} JVMPI_Lineno;

/* Event sent to NotifyEvent. */
typedef struct {
    jint event_type;                /* JVMPI_EVENT_..., possibly | JVMPI_REQUESTED_EVENT */
    JNIEnv *env_id;                 /* thread in which the event occurred */

    union {
        /* JVMPI_EVENT_CLASS_LOAD */
        struct {
            char *class_name;           /* class name, with dots */
            char *source_name;          /* name of the source file */
            jint num_interfaces;        /* number of interfaces implemented */
            jint num_methods;           /* number of methods in the class */
            JVMPI_Method *methods;      /* methods */
            jint num_static_fields;     /* number of static fields */
            JVMPI_Field *statics;       /* static fields */
            jint num_instance_fields;   /* number of instance fields */
            JVMPI_Field *instances;     /* instance fields */
            jobjectID class_id;         /* ID of the class object */
        } class_load;

        /* JVMPI_EVENT_CLASS_UNLOAD */
        struct {
            jobjectID class_id;         /* ID of the class object */
        } class_unload;

        /* JVMPI_EVENT_CLASS_LOAD_HOOK */
        struct {
            unsigned char *class_data;        /* class file as read by the VM */
            jint class_data_len;              /* its length */
            unsigned char *new_class_data;    /* instrumented class file, set by the agent */
            jint new_class_data_len;          /* its length, set by the agent */
            void * (*malloc_f)(unsigned int); /* allocator for new_class_data */
        } class_load_hook;

        /* JVMPI_EVENT_OBJECT_ALLOC */
        struct {
            jint arena_id;              /* arena the object was allocated in */
            jobjectID class_id;         /* class, or element class of an object array */
            jint is_array;              /* JVMPI_NORMAL_OBJECT, JVMPI_CLASS, JVMPI_INT ... */
            jint size;                  /* size in bytes */
            jobjectID obj_id;           /* ID of the new object */
        } obj_alloc;

        /* JVMPI_EVENT_OBJECT_FREE */
        struct {
            jobjectID obj_id;           /* ID of the freed object */
        } obj_free;

        /* JVMPI_EVENT_OBJECT_MOVE */
        struct {
            jint arena_id;              /* current arena */
            jobjectID obj_id;           /* current object ID */
            jint new_arena_id;          /* new arena */
            jobjectID new_obj_id;       /* new object ID */
        } obj_move;

        /* JVMPI_EVENT_ARENA_NEW */
        struct {
            jint arena_id;              /* ID of the arena */
            char *arena_name;           /* name of the arena */
        } new_arena;

        /* JVMPI_EVENT_ARENA_DELETE */
        struct {
            jint arena_id;              /* ID of the arena */
        } delete_arena;

        /* JVMPI_EVENT_THREAD_START */
        struct {
            char *thread_name;          /* name of the thread */
            char *group_name;           /* name of its thread group */
            char *parent_name;          /* name of the parent thread group */
            jobjectID thread_id;        /* ID of the java.lang.Thread object */
            JNIEnv *thread_env_id;      /* JNIEnv of the thread */
        } thread_start;

        /* JVMPI_EVENT_HEAP_DUMP */
        struct {
            int dump_level;             /* JVMPI_DUMP_LEVEL_0, _1 or _2 */
            char *begin;                /* start of the dump buffer */
            char *end;                  /* end of the dump buffer */
            jint num_traces;            /* number of traces (0 at JVMPI_DUMP_LEVEL_0) */
            JVMPI_CallTrace *traces;    /* traces in which GC roots reside */
        } heap_dump;

        /* JVMPI_EVENT_JNI_GLOBALREF_ALLOC, JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC */
        struct {
            jobjectID obj_id;           /* object the reference refers to */
            jobject ref_id;             /* the (weak) global reference */
        } jni_globalref_alloc;

        /* JVMPI_EVENT_JNI_GLOBALREF_FREE, JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE */
        struct {
            jobject ref_id;             /* the (weak) global reference */
        } jni_globalref_free;

        /* JVMPI_EVENT_METHOD_ENTRY, JVMPI_EVENT_METHOD_EXIT */
        struct {
            jmethodID method_id;        /* the method */
        } method;

        /* JVMPI_EVENT_METHOD_ENTRY2 */
        struct {
            jmethodID method_id;        /* the method */
            jobjectID obj_id;           /* target object, NULL for static methods */
        } method_entry2;

        /* JVMPI_EVENT_COMPILED_METHOD_LOAD */
        struct {
            jmethodID method_id;        /* the compiled method */
            void *code_addr;            /* start of its code in memory */
            jint code_size;             /* size of its code */
            jint lineno_table_size;     /* number of entries in lineno_table */
            JVMPI_Lineno *lineno_table; /* code offset to source line mapping */
        } compiled_method_load;

        /* JVMPI_EVENT_COMPILED_METHOD_UNLOAD */
        struct {
            jmethodID method_id;        /* the unloaded compiled method */
        } compiled_method_unload;

        /* JVMPI_EVENT_INSTRUCTION_START */
        struct {
            jmethodID method_id;        /* method the instruction belongs to */
            jint offset;                /* bytecode offset of the instruction */
            union {
                struct {
                    jboolean is_true;   /* whether the branch is taken */
                } if_info;
                struct {
                    jint key;           /* index value on top of the stack */
                    jint low;           /* lowest index of the table */
                    jint hi;            /* highest index of the table */
                } tableswitch_info;
                struct {
                    jint chosen_pair_index; /* chosen pair (0-based); equal to
                                               pairs_total for the default branch */
                    jint pairs_total;       /* number of pairs */
                } lookupswitch_info;
            } u;
        } instruction;

        /* JVMPI_EVENT_MONITOR_DUMP */
        struct {
            char *begin;                /* start of the dump buffer */
            char *end;                  /* end of the dump buffer */
            jint num_traces;            /* number of thread traces */
            JVMPI_CallTrace *traces;    /* traces of all threads */
            jint *threads_status;       /* status of all threads */
        } monitor_dump;

        /* JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER, _ENTERED, _EXIT */
        struct {
            char *name;                 /* name of the raw monitor */
            JVMPI_RawMonitor id;        /* the raw monitor */
        } raw_monitor;

        /* JVMPI_EVENT_MONITOR_CONTENDED_ENTER, _ENTERED, _EXIT */
        struct {
            jobjectID object;           /* object whose monitor it is */
        } monitor;

        /* JVMPI_EVENT_MONITOR_WAIT, JVMPI_EVENT_MONITOR_WAITED */
        struct {
            jobjectID object;           /* object waited on, NULL in Thread.sleep */
            jlong timeout;              /* milliseconds (0: forever) */
        } monitor_wait;

        /* JVMPI_EVENT_GC_FINISH */
        struct {
            jlong used_objects;         /* number of live objects */
            jlong used_object_space;    /* bytes used by live objects */
            jlong total_object_space;   /* total heap size in bytes */
        } gc_info;

        /* JVMPI_EVENT_OBJECT_DUMP */
        struct {
            jint data_len;              /* length of the dump buffer */
            char *data;                 /* start of the dump buffer */
        } object_dump;
    } u;
} JVMPI_Event;

/* Function table returned by GetEnv(..., JVMPI_VERSION_1...). */
typedef struct {
    jint version;                   /* JVMPI version */

    /* Implemented by the agent, set before JVM_OnLoad returns. */
    void (*NotifyEvent)(JVMPI_Event *event);

    /* Implemented by the VM. */
    jint (*EnableEvent)(jint event_type, void *arg);
    jint (*DisableEvent)(jint event_type, void *arg);
    jint (*RequestEvent)(jint event_type, void *arg);

    void (*GetCallTrace)(JVMPI_CallTrace *trace, jint depth);

    void (*ProfilerExit)(jint err_code);

    JVMPI_RawMonitor (*RawMonitorCreate)(char *lock_name);
    void (*RawMonitorEnter)(JVMPI_RawMonitor lock_id);
    void (*RawMonitorExit)(JVMPI_RawMonitor lock_id);
    void (*RawMonitorWait)(JVMPI_RawMonitor lock_id, jlong ms);
    void (*RawMonitorNotifyAll)(JVMPI_RawMonitor lock_id);
    void (*RawMonitorDestroy)(JVMPI_RawMonitor lock_id);

    jlong (*GetCurrentThreadCpuTime)(void);     /* nanoseconds */

    void (*SuspendThread)(JNIEnv *env);
    void (*ResumeThread)(JNIEnv *env);
    jint (*GetThreadStatus)(JNIEnv *env);
    jboolean (*ThreadHasRun)(JNIEnv *env);

    /* Safe only after JVMPI_EVENT_JVM_INIT_DONE. */
    jint (*CreateSystemThread)(char *name, jint priority, void (*f)(void *));

    void (*SetThreadLocalStorage)(JNIEnv *env_id, void *ptr);
    void * (*GetThreadLocalStorage)(JNIEnv *env_id);

    void (*DisableGC)(void);
    void (*EnableGC)(void);
    void (*RunGC)(void);

    jobjectID (*GetThreadObject)(JNIEnv *env);
    jobjectID (*GetMethodClass)(jmethodID mid);

    /* JVMPI_VERSION_1_1 and later. */
    jobject   (*jobjectID2jobject)(jobjectID jid);
    jobjectID (*jobject2jobjectID)(jobject jobj);

    /* JVMPI_VERSION_1_2 and later. */
    void (*SuspendThreadList)(jint reqCount, JNIEnv **reqList, jint *results);
    void (*ResumeThreadList)(jint reqCount, JNIEnv **reqList, jint *results);
} JVMPI_Interface;

/* Argument of RequestEvent(JVMPI_EVENT_HEAP_DUMP, ...). */
typedef struct {
    jint heap_dump_level;           /* JVMPI_DUMP_LEVEL_0, _1 or _2 */
} JVMPI_HeapDumpArg;

/* ------------------------------------------------------------------------
 * Event types.
 * ------------------------------------------------------------------------ */

#define JVMPI_EVENT_METHOD_ENTRY                  ((jint)1)
#define JVMPI_EVENT_METHOD_ENTRY2                 ((jint)2)
#define JVMPI_EVENT_METHOD_EXIT                   ((jint)3)

#define JVMPI_EVENT_OBJECT_ALLOC                  ((jint)4)
#define JVMPI_EVENT_OBJECT_FREE                   ((jint)5)
#define JVMPI_EVENT_OBJECT_MOVE                   ((jint)6)

#define JVMPI_EVENT_COMPILED_METHOD_LOAD          ((jint)7)
#define JVMPI_EVENT_COMPILED_METHOD_UNLOAD        ((jint)8)

#define JVMPI_EVENT_INSTRUCTION_START             ((jint)9)

#define JVMPI_EVENT_THREAD_START                  ((jint)33)
#define JVMPI_EVENT_THREAD_END                    ((jint)34)

#define JVMPI_EVENT_CLASS_LOAD_HOOK               ((jint)35)

#define JVMPI_EVENT_HEAP_DUMP                     ((jint)37)
#define JVMPI_EVENT_JNI_GLOBALREF_ALLOC           ((jint)38)
#define JVMPI_EVENT_JNI_GLOBALREF_FREE            ((jint)39)
#define JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC      ((jint)40)
#define JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE       ((jint)41)
#define JVMPI_EVENT_CLASS_LOAD                    ((jint)42)
#define JVMPI_EVENT_CLASS_UNLOAD                  ((jint)43)
#define JVMPI_EVENT_DATA_DUMP_REQUEST             ((jint)44)
#define JVMPI_EVENT_DATA_RESET_REQUEST            ((jint)45)

#define JVMPI_EVENT_JVM_INIT_DONE                 ((jint)46)
#define JVMPI_EVENT_JVM_SHUT_DOWN                 ((jint)47)

#define JVMPI_EVENT_ARENA_NEW                     ((jint)48)
#define JVMPI_EVENT_ARENA_DELETE                  ((jint)49)

#define JVMPI_EVENT_OBJECT_DUMP                   ((jint)50)

#define JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTER   ((jint)51)
#define JVMPI_EVENT_RAW_MONITOR_CONTENDED_ENTERED ((jint)52)
#define JVMPI_EVENT_RAW_MONITOR_CONTENDED_EXIT    ((jint)53)
#define JVMPI_EVENT_MONITOR_CONTENDED_ENTER       ((jint)54)
#define JVMPI_EVENT_MONITOR_CONTENDED_ENTERED     ((jint)55)
#define JVMPI_EVENT_MONITOR_CONTENDED_EXIT        ((jint)56)
#define JVMPI_EVENT_MONITOR_WAIT                  ((jint)57)
#define JVMPI_EVENT_MONITOR_WAITED                ((jint)58)
#define JVMPI_EVENT_MONITOR_DUMP                  ((jint)59)

#define JVMPI_EVENT_GC_START                      ((jint)60)
#define JVMPI_EVENT_GC_FINISH                     ((jint)61)

#define JVMPI_MAX_EVENT_TYPE_VAL                  ((jint)61)

/* Older names of some event types. */
#define JVMPI_EVENT_LOAD_COMPILED_METHOD          ((jint)7)
#define JVMPI_EVENT_UNLOAD_COMPILED_METHOD        ((jint)8)
#define JVMPI_EVENT_NEW_ARENA                     ((jint)48)
#define JVMPI_EVENT_DELETE_ARENA                  ((jint)49)
#define JVMPI_EVENT_DUMP_DATA_REQUEST             ((jint)44)
#define JVMPI_EVENT_RESET_DATA_REQUEST            ((jint)45)
#define JVMPI_EVENT_OBJ_ALLOC                     ((jint)4)
#define JVMPI_EVENT_OBJ_FREE                      ((jint)5)
#define JVMPI_EVENT_OBJ_MOVE                      ((jint)6)

/* Bit set in event_type of events sent in answer to RequestEvent. */
#define JVMPI_REQUESTED_EVENT                     ((jint)0x10000000)

/* ------------------------------------------------------------------------
 * Results of EnableEvent, DisableEvent and RequestEvent.
 * ------------------------------------------------------------------------ */

#define JVMPI_SUCCESS                    ((jint)0)
#define JVMPI_NOT_AVAILABLE              ((jint)1)
#define JVMPI_FAIL                       ((jint)-1)

/* ------------------------------------------------------------------------
 * Thread status (GetThreadStatus).
 * ------------------------------------------------------------------------ */

enum {
    JVMPI_THREAD_RUNNABLE = 1,
    JVMPI_THREAD_MONITOR_WAIT,
    JVMPI_THREAD_CONDVAR_WAIT
};

#define JVMPI_THREAD_SUSPENDED           0x8000
#define JVMPI_THREAD_INTERRUPTED         0x4000

/* ------------------------------------------------------------------------
 * Thread priorities (CreateSystemThread).
 * ------------------------------------------------------------------------ */

#define JVMPI_MINIMUM_PRIORITY           1
#define JVMPI_MAXIMUM_PRIORITY           10
#define JVMPI_NORMAL_PRIORITY            5

/* ------------------------------------------------------------------------
 * Object and array element types (obj_alloc.is_array, "ty" in dumps).
 * ------------------------------------------------------------------------ */

#define JVMPI_NORMAL_OBJECT              ((jint)0)
#define JVMPI_CLASS                      ((jint)2)
#define JVMPI_BOOLEAN                    ((jint)4)
#define JVMPI_CHAR                       ((jint)5)
#define JVMPI_FLOAT                      ((jint)6)
#define JVMPI_DOUBLE                     ((jint)7)
#define JVMPI_BYTE                       ((jint)8)
#define JVMPI_SHORT                      ((jint)9)
#define JVMPI_INT                        ((jint)10)
#define JVMPI_LONG                       ((jint)11)

/* ------------------------------------------------------------------------
 * Monitor dump record types.
 * ------------------------------------------------------------------------ */

#define JVMPI_MONITOR_JAVA               0x01
#define JVMPI_MONITOR_RAW                0x02

/* ------------------------------------------------------------------------
 * Heap dump record types.
 * ------------------------------------------------------------------------ */

#define JVMPI_GC_ROOT_UNKNOWN            0xff
#define JVMPI_GC_ROOT_JNI_GLOBAL         0x01
#define JVMPI_GC_ROOT_JNI_LOCAL          0x02
#define JVMPI_GC_ROOT_JAVA_FRAME         0x03
#define JVMPI_GC_ROOT_NATIVE_STACK       0x04
#define JVMPI_GC_ROOT_STICKY_CLASS       0x05
#define JVMPI_GC_ROOT_THREAD_BLOCK       0x06
#define JVMPI_GC_ROOT_MONITOR_USED       0x07
#define JVMPI_GC_ROOT_THREAD_OBJ         0x08

#define JVMPI_GC_CLASS_DUMP              0x20
#define JVMPI_GC_INSTANCE_DUMP           0x21
#define JVMPI_GC_OBJ_ARRAY_DUMP          0x22
#define JVMPI_GC_PRIM_ARRAY_DUMP         0x23

/* ------------------------------------------------------------------------
 * Heap dump levels (JVMPI_HeapDumpArg.heap_dump_level).
 * ------------------------------------------------------------------------ */

#define JVMPI_DUMP_LEVEL_0               ((jint)0)
#define JVMPI_DUMP_LEVEL_1               ((jint)1)
#define JVMPI_DUMP_LEVEL_2               ((jint)2)

/* ------------------------------------------------------------------------
 * Dump buffer formats.
 *
 * Sizes: u1, u2, u4, u8 are 1, 2, 4 and 8 bytes, written big-endian.
 * jobjectID, JNIEnv *, jobject, JVMPI_RawMonitor and char * are written
 * as raw pointers (native width and byte order).
 *
 * ty (u1): JVMPI_CLASS (object), JVMPI_BOOLEAN, JVMPI_CHAR, JVMPI_FLOAT,
 *          JVMPI_DOUBLE, JVMPI_BYTE, JVMPI_SHORT, JVMPI_INT, JVMPI_LONG
 * vl:      a value of that type: boolean/byte u1, short/char u2,
 *          int/float u4, long/double u8, object jobjectID
 *
 * Monitor dump (JVMPI_EVENT_MONITOR_DUMP), a sequence of:
 *   u1 record type
 *   JVMPI_MONITOR_JAVA:  jobjectID object, JNIEnv * owner, u4 entry count,
 *                        u4 n, [JNIEnv *]*n threads waiting to enter,
 *                        u4 m, [JNIEnv *]*m threads waiting to be notified
 *   JVMPI_MONITOR_RAW:   char * name, JVMPI_RawMonitor monitor,
 *                        JNIEnv * owner, u4 entry count,
 *                        u4 n, [JNIEnv *]*n threads waiting to enter,
 *                        u4 m, [JNIEnv *]*m threads waiting to be notified
 *
 * Heap dump (JVMPI_EVENT_HEAP_DUMP), JVMPI_DUMP_LEVEL_0, a sequence of:
 *   u1 ty, jobjectID object
 *
 * Heap dump, JVMPI_DUMP_LEVEL_1 and _2, a sequence of u1 record type and:
 *   JVMPI_GC_ROOT_UNKNOWN:       jobjectID object
 *   JVMPI_GC_ROOT_JNI_GLOBAL:    jobjectID object, jobject global ref
 *   JVMPI_GC_ROOT_JNI_LOCAL:     jobjectID object, JNIEnv * thread,
 *                                u4 frame # in trace (-1 for empty)
 *   JVMPI_GC_ROOT_JAVA_FRAME:    jobjectID object, JNIEnv * thread,
 *                                u4 frame # in trace (-1 for empty)
 *   JVMPI_GC_ROOT_NATIVE_STACK:  jobjectID object, JNIEnv * thread
 *   JVMPI_GC_ROOT_STICKY_CLASS:  jobjectID class
 *   JVMPI_GC_ROOT_THREAD_BLOCK:  jobjectID thread object, JNIEnv * thread
 *   JVMPI_GC_ROOT_MONITOR_USED:  jobjectID object
 *   JVMPI_GC_CLASS_DUMP:         jobjectID class, super, class loader,
 *                                signers, protection domain,
 *                                jobjectID class name (a second void *
 *                                reserved in JDK 1.2), void * reserved,
 *                                u4 instance size,
 *                                [jobjectID]* interfaces,
 *                                u2 constant pool size,
 *                                [u2 index, ty type, vl value]*,
 *                                [vl]* static field values
 *   JVMPI_GC_INSTANCE_DUMP:      jobjectID object, jobjectID class,
 *                                u4 number of bytes that follow,
 *                                [vl]* instance field values (class first,
 *                                then super, super's super ...)
 *   JVMPI_GC_OBJ_ARRAY_DUMP:     jobjectID array, u4 number of elements,
 *                                jobjectID element class, [jobjectID]*
 *   JVMPI_GC_PRIM_ARRAY_DUMP:    jobjectID array, u4 number of elements,
 *                                ty element type, [vl]*
 * JVMPI_DUMP_LEVEL_1 leaves out primitive instance fields, primitive
 * static fields and primitive array elements.
 *
 * Object dump (JVMPI_EVENT_OBJECT_DUMP): one u1 record type followed by a
 * JVMPI_GC_CLASS_DUMP, JVMPI_GC_INSTANCE_DUMP, JVMPI_GC_OBJ_ARRAY_DUMP or
 * JVMPI_GC_PRIM_ARRAY_DUMP record, at JVMPI_DUMP_LEVEL_2.
 * ------------------------------------------------------------------------ */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* !_JAVASOFT_JVMPI_H_ */
