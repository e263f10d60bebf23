// CBenchSupport: process-level instrumentation for troupe-bench.
//
// Linking this target into an executable interposes the malloc family
// (malloc, calloc, realloc, free, posix_memalign, aligned_alloc, memalign)
// for the whole process, including the Swift runtime, libdispatch and Foundation.
// Every call is forwarded to glibc's allocator; the wrappers only count.
#ifndef CBENCHSUPPORT_H
#define CBENCHSUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Number of allocations performed by the process so far: calls to malloc,
/// calloc, memalign, posix_memalign and aligned_alloc, plus realloc calls that
/// produced a new block (realloc(NULL, n), or a block that moved).
/// Monotonic; take the difference of two readings.
uint64_t CBenchSupport_allocation_count(void);

/// User + system CPU time consumed by the whole process (all threads), in seconds.
double CBenchSupport_process_cpu_seconds(void);

/// Bytes in allocated heap chunks across all malloc arenas, and in the blocks malloc maps on
/// their own (mallinfo2().uordblks + hblkhd).
size_t CBenchSupport_heap_in_use(void);

/// Starts a new peak-memory window: returns free heap memory to the kernel (malloc_trim), then
/// resets the kernel's resident-set high-water mark (VmHWM) to the current RSS by writing "5"
/// to /proc/self/clear_refs. Returns 0 on success, -1 when the reset is unavailable.
int CBenchSupport_reset_peak_rss(void);

/// The resident-set high-water mark (VmHWM of /proc/self/status) in bytes, or -1.
int64_t CBenchSupport_peak_rss_bytes(void);

/// The current resident set (VmRSS of /proc/self/status) in bytes, or -1.
int64_t CBenchSupport_rss_bytes(void);

/// The calling thread's kernel id (gettid).
int CBenchSupport_thread_id(void);

/// Lets thread `tid` of this process run only on CPU `cpu`, or on every CPU the process may use
/// when `cpu` is negative (sched_setaffinity; the process's CPUs are its main thread's). Returns
/// 0, or the errno that says why not (EINVAL: `cpu` is not one of the process's CPUs).
int CBenchSupport_place_thread(int tid, int cpu);

/// CLOCK_MONOTONIC in nanoseconds (vDSO, ~20 ns): the latency probes' clock.
static inline uint64_t CBenchSupport_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

#ifdef __cplusplus
}
#endif

#endif // CBENCHSUPPORT_H
