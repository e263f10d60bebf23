// An event count on a futex, for parking idle workers without lost wake-ups.
//
// Concurrency contract:
// - Sleeper: prepare_wait (sleepers += 1, then read epoch), re-check for work, then wait(epoch)
//   or cancel_wait. Waker: publish work, full fence, then notify (reads sleepers; when non-zero
//   bumps epoch and wakes).
// - If the waker reads sleepers == 0, the sleeper's increment comes later in the total order,
//   so its re-check sees the published work. Otherwise the epoch changes, so FUTEX_WAIT on the
//   old epoch returns at once or is woken by the FUTEX_WAKE that follows the bump.
#include "CTroupe.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct CTroupe_eventcount {
    alignas(64) _Atomic uint32_t epoch;
    _Atomic uint32_t sleepers;
};

_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t), "futex words are plain 32-bit integers");

CTroupe_eventcount *CTroupe_eventcount_create(void) {
    CTroupe_eventcount *eventcount = aligned_alloc(64, 64);
    if (eventcount == NULL) abort();
    atomic_init(&eventcount->epoch, 0);
    atomic_init(&eventcount->sleepers, 0);
    return eventcount;
}

void CTroupe_eventcount_destroy(CTroupe_eventcount *eventcount) {
    free(eventcount);
}

uint32_t CTroupe_eventcount_prepare_wait(CTroupe_eventcount *eventcount) {
    atomic_fetch_add_explicit(&eventcount->sleepers, 1, memory_order_seq_cst);
    return atomic_load_explicit(&eventcount->epoch, memory_order_seq_cst);
}

void CTroupe_eventcount_cancel_wait(CTroupe_eventcount *eventcount) {
    atomic_fetch_sub_explicit(&eventcount->sleepers, 1, memory_order_seq_cst);
}

void CTroupe_eventcount_wait(CTroupe_eventcount *eventcount, uint32_t epoch, int64_t timeout_ns) {
    struct timespec timeout;
    struct timespec *timeout_pointer = NULL;
    if (timeout_ns >= 0) {
        timeout.tv_sec = timeout_ns / 1000000000;
        timeout.tv_nsec = timeout_ns % 1000000000;
        timeout_pointer = &timeout;
    }
    if (atomic_load_explicit(&eventcount->epoch, memory_order_acquire) == epoch) {
        // EINTR, EAGAIN (epoch moved) and ETIMEDOUT all mean: go and look for work again.
        syscall(SYS_futex, (uint32_t *)&eventcount->epoch, FUTEX_WAIT_PRIVATE, epoch, timeout_pointer, NULL, 0);
    }
    atomic_fetch_sub_explicit(&eventcount->sleepers, 1, memory_order_seq_cst);
}

void CTroupe_eventcount_notify(CTroupe_eventcount *eventcount, bool all) {
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&eventcount->sleepers, memory_order_relaxed) == 0) return;
    atomic_fetch_add_explicit(&eventcount->epoch, 1, memory_order_seq_cst);
    syscall(SYS_futex, (uint32_t *)&eventcount->epoch, FUTEX_WAKE_PRIVATE, all ? INT_MAX : 1, NULL, NULL, 0);
}

uint32_t CTroupe_eventcount_sleepers(const CTroupe_eventcount *eventcount) {
    return atomic_load_explicit(&((CTroupe_eventcount *)eventcount)->sleepers, memory_order_relaxed);
}
