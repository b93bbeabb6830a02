/* The suite's stand-in for oprofile's libopagent: the functions the oprofile JVMPI agent
 * calls, each writing one line to $OPAGENT_LOG (default opagent.log) instead of feeding
 * oprofile's daemon. For each piece of JIT code it also says which mapping of this process
 * holds its address, so a checker can tell real code addresses from junk.
 * Part of jvmpi-shim's real-agent suite; built against the agent's own opagent.h. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "opagent.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_file;
static unsigned long loads, unloads;

static void say(const char *fmt, ...) {
    va_list ap;
    pthread_mutex_lock(&log_lock);
    if (log_file == NULL) {
        const char *name = getenv("OPAGENT_LOG");
        log_file = fopen(name != NULL ? name : "opagent.log", "w");
    }
    if (log_file != NULL) {
        va_start(ap, fmt);
        vfprintf(log_file, fmt, ap);
        va_end(ap);
        fputc('\n', log_file);
        fflush(log_file);
    }
    pthread_mutex_unlock(&log_lock);
}

/* "<perms> <file or [anon]>" of the mapping holding addr, or "unmapped" */
static void where(uint64_t addr, char *out, size_t len) {
    char line[600];
    FILE *maps = fopen("/proc/self/maps", "r");
    snprintf(out, len, "unmapped");
    if (maps == NULL) return;
    while (fgets(line, sizeof line, maps) != NULL) {
        unsigned long lo, hi;
        char perms[8], file[400];
        file[0] = '\0';
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %399s", &lo, &hi, perms, file) < 3) continue;
        if (addr >= lo && addr < hi) {
            snprintf(out, len, "%s %s", perms, file[0] ? file : "[anon]");
            break;
        }
    }
    fclose(maps);
}

op_agent_t op_open_agent(void) {
    say("op_open_agent()");
    return (op_agent_t)&log_lock;
}

int op_close_agent(op_agent_t hdl) {
    say("op_close_agent(%p) loads=%lu unloads=%lu", hdl, loads, unloads);
    return 0;
}

int op_write_native_code(op_agent_t hdl, char const *symbol_name, uint64_t vma, void const *code,
                         const unsigned int code_size) {
    char map[450];
    where(vma, map, sizeof map);
    loads++;
    say("op_write_native_code(%p, \"%s\", vma=0x%llx, code=%p, size=%u) map=%s", hdl, symbol_name,
        (unsigned long long)vma, code, code_size, map);
    return 0;
}

int op_write_debug_line_info(op_agent_t hdl, void const *code, size_t nr_entry,
                             struct debug_line_info const *compile_map) {
    (void)compile_map;
    say("op_write_debug_line_info(%p, code=%p, entries=%zu)", hdl, code, nr_entry);
    return 0;
}

int op_unload_native_code(op_agent_t hdl, uint64_t vma) {
    unloads++;
    say("op_unload_native_code(%p, vma=0x%llx)", hdl, (unsigned long long)vma);
    return 0;
}

int op_major_version(void) { return 1; }
int op_minor_version(void) { return 0; }
