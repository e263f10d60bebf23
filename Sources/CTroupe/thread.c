// Thread placement and per-thread runtime state.
#define _GNU_SOURCE
#include "CTroupe.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

static _Thread_local void *current_worker;
static _Thread_local void *current_job_lane;
static _Thread_local void *current_task_executor;
static _Thread_local void *current_inline_turns;
static _Thread_local bool releasing_stopped_actor;
static _Thread_local void *unanswered_reply_error;

int CTroupe_pin_current_thread(int cpu) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return EINVAL;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int CTroupe_set_current_thread_timer_slack(unsigned long nanoseconds) {
    return prctl(PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0) == 0 ? 0 : errno;
}

int CTroupe_allowed_cpus(int *out, int capacity) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return -errno;
    int count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && count < capacity; cpu++) {
        if (CPU_ISSET(cpu, &set)) out[count++] = cpu;
    }
    return count;
}

void *CTroupe_current_worker(void) { return current_worker; }
void CTroupe_set_current_worker(void *worker) { current_worker = worker; }

void *CTroupe_current_job_lane(void) { return current_job_lane; }
void CTroupe_set_current_job_lane(void *lane) { current_job_lane = lane; }

void *CTroupe_current_task_executor(void) { return current_task_executor; }
void CTroupe_set_current_task_executor(void *executor) { current_task_executor = executor; }

void *CTroupe_current_inline_turns(void) { return current_inline_turns; }
void CTroupe_set_current_inline_turns(void *scope) { current_inline_turns = scope; }

bool CTroupe_is_releasing_stopped_actor(void) { return releasing_stopped_actor; }
void CTroupe_set_releasing_stopped_actor(bool releasing) { releasing_stopped_actor = releasing; }

void *CTroupe_unanswered_reply_error(void) { return unanswered_reply_error; }
void CTroupe_set_unanswered_reply_error(void *error) { unanswered_reply_error = error; }

int CTroupe_set_thread_name(unsigned long thread, const char *name) {
    _Static_assert(sizeof(pthread_t) == sizeof(unsigned long), "pthread_t is an unsigned long on Linux");
    return pthread_setname_np((pthread_t)thread, name);
}

int64_t CTroupe_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

void CTroupe_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
