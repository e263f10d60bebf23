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
    cpu_set_t set;
    CPU_ZERO(&set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpu >= 0) {
        if (cpu >= online || cpu >= CPU_SETSIZE) return EINVAL;
        CPU_SET(cpu, &set);
    } else {
        for (long index = 0; index < online && index < CPU_SETSIZE; index++) CPU_SET(index, &set);
    }
    return sched_setaffinity(tid, sizeof set, &set) == 0 ? 0 : errno;
}
