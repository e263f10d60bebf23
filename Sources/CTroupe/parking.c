// An event count on a futex, for parking idle threads without lost wake-ups, and without a
// futex call per notify while a woken sleeper is still on its way.
//
// State: one 64-bit word, so that the three counts change together.
//   bits  0–31  epoch: the futex word (the low half on a little-endian machine); moves by one
//               with every notify that wakes.
//   bits 32–47  sleepers: threads between prepare_wait and the end of their wait.
//   bits 48–63  pending: wakes issued (epoch moved) whose sleepers have not left yet.
//
// Concurrency contract:
// - Sleeper: prepare_wait (sleepers += 1 and read the epoch, one atomic step), re-check for
//   work, then wait(epoch) or cancel_wait. Either ends by leaving: sleepers -= 1, and pending -=
//   1 when pending > 0. A thread that leaves re-checks for work afterwards (every caller loops).
// - Waker: publish work, full fence, then notify: when sleepers > pending, one compare-exchange
//   moves the epoch and adds a pending wake, then FUTEX_WAKE wakes one sleeper. When every
//   sleeper already has a wake coming (sleepers <= pending) it does nothing: no futex call.
// - No lost wake-up. If the waker reads sleepers == 0, the sleeper's increment comes later in
//   the total order, so its re-check sees the published work. Otherwise let E be the counted
//   sleepers that will leave without another futex wake (woken, timed out, re-checking, or
//   holding an epoch that has moved), Q those asleep in the kernel, W the wakes issued and not
//   yet delivered, counting a wake-all still in flight (between its compare-exchange and its
//   FUTEX_WAKE) as |Q| wakes. Every transition keeps  pending <= |E| + min(W, |Q|)  (a notify
//   adds one pending wake only while sleepers > pending and moves every not-yet-asleep sleeper
//   into E; a delivered wake moves a Q into E; a leave removes one pending). Without that
//   counting the bound fails for a wake-all (spin found it: two sleepers in the kernel, a
//   wake-all in flight, pending 2 > 0 + min(1, 2)), though no wake-up is lost, since a wake-all
//   reaches every sleeper in the kernel. The bound, the protocol and a broken variant of each
//   step are model-checked: Sources/CTroupe/models/event-count.pml. So when a notify skips,
//   pending >= 1 and some counted sleeper will still leave, after the waker's fence, and then
//   re-check: it finds the work, exactly as the sleeper a FUTEX_WAKE would have woken.
//   A single waiter (timer thread, blocking ask) simply has its wake already coming.
#include "CTroupe.h"
#include "checks.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EPOCH_MASK UINT64_C(0x00000000ffffffff)
#define SLEEPER_ONE (UINT64_C(1) << 32)
#define PENDING_ONE (UINT64_C(1) << 48)

struct CTroupe_eventcount {
    alignas(64) _Atomic uint64_t state;
    /// FUTEX_WAKE calls issued, for tests and diagnostics.
    _Atomic uint64_t wakes;
};

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the futex word is the low half of the state");
_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t), "the state is a plain 64-bit word");

static inline uint32_t epoch_of(uint64_t state) { return (uint32_t)(state & EPOCH_MASK); }
static inline uint32_t sleepers_of(uint64_t state) { return (uint32_t)((state >> 32) & 0xffff); }
static inline uint32_t pending_of(uint64_t state) { return (uint32_t)(state >> 48); }
static inline uint32_t *futex_word(CTroupe_eventcount *eventcount) { return (uint32_t *)&eventcount->state; }

CTroupe_eventcount *CTroupe_eventcount_create(void) {
    CTroupe_eventcount *eventcount = aligned_alloc(64, 64);
    if (eventcount == NULL) abort();
    atomic_init(&eventcount->state, 0);
    atomic_init(&eventcount->wakes, 0);
    return eventcount;
}

void CTroupe_eventcount_destroy(CTroupe_eventcount *eventcount) {
    CTROUPE_CHECK(sleepers_of(atomic_load_explicit(&eventcount->state, memory_order_relaxed)) == 0,
                  "an event count is destroyed with no thread between prepare_wait and the end of its wait");
    free(eventcount);
}

uint32_t CTroupe_eventcount_prepare_wait(CTroupe_eventcount *eventcount) {
    uint64_t before = atomic_fetch_add_explicit(&eventcount->state, SLEEPER_ONE, memory_order_seq_cst);
    // The caller's re-check for work comes next, with plain loads. A sequentially consistent
    // read-modify-write orders them on x86-64 (a locked instruction is a full barrier), but C11
    // (and AArch64) does not promise that it orders later non-seq_cst loads: this fence does,
    // for the cost of one fence per park (the models check SC interleavings only).
    atomic_thread_fence(memory_order_seq_cst);
    // 65,535 threads parked on one event count at once would overflow into `pending`.
    if (sleepers_of(before) == 0xffff) abort();
    return epoch_of(before);
}

/// Ends a wait: one sleeper fewer, and one pending wake fewer if any (it may have been this one's).
static void leave(CTroupe_eventcount *eventcount) {
    uint64_t state = atomic_load_explicit(&eventcount->state, memory_order_relaxed);
    uint64_t next;
    do {
        CTROUPE_CHECK(sleepers_of(state) > 0, "cancel_wait and wait only after prepare_wait");
        CTROUPE_CHECK(pending_of(state) <= sleepers_of(state), "never more pending wakes than sleepers");
        next = state - SLEEPER_ONE;
        if (pending_of(state) > 0) next -= PENDING_ONE;
    } while (!atomic_compare_exchange_weak_explicit(&eventcount->state, &state, next, memory_order_seq_cst,
                                                    memory_order_relaxed));
}

void CTroupe_eventcount_cancel_wait(CTroupe_eventcount *eventcount) {
    leave(eventcount);
}

void CTroupe_eventcount_wait(CTroupe_eventcount *eventcount, uint32_t epoch, int64_t timeout_ns) {
    struct timespec timeout;
    struct timespec *timeout_pointer = NULL;
    if (timeout_ns >= 0) {
        timeout.tv_sec = timeout_ns / 1000000000;
        timeout.tv_nsec = timeout_ns % 1000000000;
        timeout_pointer = &timeout;
    }
    if (epoch_of(atomic_load_explicit(&eventcount->state, memory_order_acquire)) == epoch) {
        // EINTR, EAGAIN (epoch moved) and ETIMEDOUT all mean: go and look for work again.
        syscall(SYS_futex, futex_word(eventcount), FUTEX_WAIT_PRIVATE, epoch, timeout_pointer, NULL, 0);
    }
    leave(eventcount);
}

void CTroupe_eventcount_notify(CTroupe_eventcount *eventcount, bool all) {
    atomic_thread_fence(memory_order_seq_cst);
    uint64_t state = atomic_load_explicit(&eventcount->state, memory_order_relaxed);
    uint64_t next;
    do {
        uint32_t sleepers = sleepers_of(state);
        uint32_t pending = pending_of(state);
        // Every sleeper already has a wake coming (see the contract): nothing to do. A wake of
        // all still moves the epoch, so that no sleeper waits past it.
        if (sleepers == 0 || (!all && sleepers <= pending)) return;
        uint64_t counts = state & ~EPOCH_MASK;
        uint32_t nextPending = all ? sleepers : pending + 1;
        counts = (counts & ~(UINT64_C(0xffff) << 48)) | ((uint64_t)nextPending << 48);
        next = counts | (uint64_t)(uint32_t)(epoch_of(state) + 1);
    } while (!atomic_compare_exchange_weak_explicit(&eventcount->state, &state, next, memory_order_seq_cst,
                                                    memory_order_relaxed));
    atomic_fetch_add_explicit(&eventcount->wakes, 1, memory_order_relaxed);
    syscall(SYS_futex, futex_word(eventcount), FUTEX_WAKE_PRIVATE, all ? INT_MAX : 1, NULL, NULL, 0);
}

uint32_t CTroupe_eventcount_sleepers(const CTroupe_eventcount *eventcount) {
    return sleepers_of(atomic_load_explicit(&((CTroupe_eventcount *)eventcount)->state, memory_order_relaxed));
}

uint32_t CTroupe_eventcount_pending(const CTroupe_eventcount *eventcount) {
    return pending_of(atomic_load_explicit(&((CTroupe_eventcount *)eventcount)->state, memory_order_relaxed));
}

uint64_t CTroupe_eventcount_wakes(const CTroupe_eventcount *eventcount) {
    return atomic_load_explicit(&((CTroupe_eventcount *)eventcount)->wakes, memory_order_relaxed);
}
