// Thread placement for troupe-bench: the cluster latency rows put the same threads of both
// forms they compare on the same CPUs, so neither gains from where the scheduler happens to
// place its threads (see clusterCallRows).

#define _GNU_SOURCE
#include "CBenchSupport.h"

#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

int CBenchSupport_thread_id(void) { return (int)syscall(SYS_gettid); }

int CBenchSupport_place_thread(int tid, int cpu) {
    // The CPUs this process may use (the main thread's mask, which the bench never changes:
    // a `taskset` the bench was started under stays in force).
    cpu_set_t allowed;
    if (sched_getaffinity(getpid(), sizeof allowed, &allowed) != 0) return errno;
    cpu_set_t set;
    if (cpu >= 0) {
        if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) return EINVAL;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
    } else {
        set = allowed;
    }
    return sched_setaffinity(tid, sizeof set, &set) == 0 ? 0 : errno;
}
