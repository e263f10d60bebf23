// CTroupe: the C half of Troupe's runtime.
//
// Everything here is implementation detail of the `Troupe` module, which imports it with
// `internal import`. Every symbol carries the `CTroupe_` prefix.
//
// Pieces, one file each under Sources/CTroupe/:
// - mailbox.c   actor mailboxes on liburcu's wait-free concurrent queue (cds_wfcq), the
//               scheduling flag that turns "mailbox went empty -> non-empty" into exactly one
//               scheduling of the actor, and the per-worker run queues (also cds_wfcq) that
//               hold scheduled mailboxes (one file: the whole scheduling protocol in one place).
// - envelope.c  the message envelope allocator: per-thread free lists by size class with
//               batched hand-over between threads, so a steady-state send allocates nothing.
// - parking.c   an event count on a futex: idle workers sleep, senders wake them, no lost wake-up.
// - histogram.c sampled latency histograms (time in mailbox, handler duration).
// - thread.c    CPU affinity, the process's allowed CPUs, timer slack, and the current-worker slot.
//
// Contracts written here as "consumer only", "holds the scheduling right" and the like are
// checked at run time in debug builds (checks.h; CTROUPE_DEBUG_CHECKS, set by Package.swift for
// the debug configuration) and compiled out of release builds.
#ifndef CTROUPE_H
#define CTROUPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - Envelopes

/// The header of every message envelope. The payload (a Swift value) follows at
/// `CTroupe_envelope_payload_offset` bytes from the start.
///
/// `link` must stay the first member: the mailbox queues envelopes through it.
typedef struct CTroupe_envelope {
    /// Queue link: owned by the mailbox while the envelope is enqueued, by the allocator while
    /// the envelope is on a free list.
    struct CTroupe_envelope *link;
    /// `CTroupe_envelope_kind_user` or `CTroupe_envelope_kind_system`. Written by the sender
    /// before the push, read by the consumer after the pop.
    uint32_t kind;
    /// Allocator size class; written by the allocator only.
    uint32_t size_class;
    /// The pending ask this envelope carries (a retained Swift object), or NULL. Released by
    /// the consumer when the envelope is handled or dead-lettered.
    void *ask_token;
    /// One word, three meanings, told apart by who holds the envelope and by its low bit.
    union {
        /// Sent (odd or 0): the allocation time (`CTroupe_monotonic_ns` with its low bit set,
        /// so always odd) of one envelope in every sampling interval (see
        /// `CTroupe_sampling_begin`), 0 for the others. Written by the allocator, read by the
        /// consumer.
        uint64_t sent_at;
        /// Sent (even, not 0): the address of a retained Swift context annotation, which
        /// Troupe's Swift side writes in place of `sent_at` before the push (the annotation
        /// keeps the sampled time). Read and released by the consumer.
        uint64_t annotation;
        /// Free, first envelope of a batch on the allocator's shared stack: the batch's length.
        uint64_t batch_length;
    } side;
} CTroupe_envelope;

enum {
    CTroupe_envelope_kind_user = 0,
    CTroupe_envelope_kind_system = 1,
    /// Payloads start here; 32 keeps them 16-byte aligned (malloc's alignment).
    CTroupe_envelope_payload_offset = 32,
    /// Payloads larger than this are allocated with malloc directly (still correct, not pooled).
    CTroupe_envelope_max_pooled_size = 2048,
};

/// Returns an envelope with room for `payload_size` bytes of payload; never NULL (aborts when
/// the process is out of memory, as Swift's allocator does). Any thread.
/// Steady state: pops a thread-local free list; refills from a shared batch stack (one mutex
/// acquisition per batch of envelopes, not per message); when both are empty, carves a slab of
/// envelopes from one malloc (16 KiB, doubling per thread and class up to 1 MiB).
CTroupe_envelope *CTroupe_envelope_alloc(size_t payload_size);

/// Returns an envelope to the calling thread's free list. Any thread, not necessarily the one
/// that allocated it; the payload must already be destroyed.
void CTroupe_envelope_free(CTroupe_envelope *envelope);

/// Starts sampling for one system: from now on one envelope in `interval` (a power of two,
/// 1...2^20) allocated by each thread carries its allocation time in `sent_at`. With several
/// systems sampling, the process stamps at the smallest interval asked for. A thread picks a
/// change up within 1,024 allocations. Any thread.
void CTroupe_sampling_begin(uint32_t interval);
/// Ends one `CTroupe_sampling_begin(interval)`. Any thread.
void CTroupe_sampling_end(uint32_t interval);
/// The interval stamped at now (0: none).
uint32_t CTroupe_sampling_interval(void);
/// malloc calls the envelope allocator made since process start (slabs and large payloads).
uint64_t CTroupe_envelope_fresh_allocations(void);

/// The same count, for the calling thread's allocations only.
uint64_t CTroupe_envelope_thread_fresh_allocations(void);

// MARK: - Mailboxes

/// An actor's mailbox: a multi-producer, single-consumer wait-free queue plus its scheduling
/// flag and depth counter. Opaque; 80 bytes, 8-byte aligned, the queue's head and tail 64
/// bytes apart (so on separate cache lines).
typedef struct CTroupe_mailbox CTroupe_mailbox;

enum {
    /// Bytes of storage a mailbox needs from its owner (8-byte aligned at least). The owner (an
    /// actor's cell) embeds it, so that a spawn allocates one object less.
    CTroupe_mailbox_storage_size = 80,
    /// Where `CTroupe_mailbox_popped`'s count lies in a mailbox, so that a walk over many
    /// mailboxes (a snapshot's top actors) can prefetch it a few cells ahead.
    CTroupe_mailbox_popped_offset = 56,
};

/// Asks the CPU to start loading the cache line at `address` for reading. A hint: nothing is
/// read, and an address that is not mapped is ignored.
static inline void CTroupe_prefetch(const void *address) { __builtin_prefetch(address, 0, 3); }

/// Makes an empty, unscheduled mailbox inside `storage` (`CTroupe_mailbox_storage_size`
/// bytes, which must outlive every use of the mailbox) and returns it; its owner pointer is
/// `owner` (unretained). With `tracks_depth`, pushes and pops maintain a depth counter (two
/// more atomic operations per message); without it `CTroupe_mailbox_depth` returns -1. With
/// `drop_oldest` (implies `tracks_depth`), senders may remove the oldest user envelope
/// (`CTroupe_mailbox_drop_oldest`) and every dequeue takes the mailbox's pop lock. Nothing to
/// free afterwards; the owner guarantees the mailbox is empty and unreachable when its storage
/// goes.
CTroupe_mailbox *CTroupe_mailbox_init(void *storage, void *owner, bool tracks_depth, bool drop_oldest);

/// The owner pointer given at creation.
void *CTroupe_mailbox_owner(const CTroupe_mailbox *mailbox);

/// Pushes an envelope. Any thread, wait-free.
/// Adds one to the depth (when tracked) unless `reserved`: a system envelope (never counted),
/// or a user envelope the caller already counted with `CTroupe_mailbox_try_reserve`.
/// Returns true when the caller won the right to schedule the owner (the mailbox was empty,
/// and the owner was neither scheduled nor running): the caller must then put the mailbox on a
/// run queue exactly once. Returns false otherwise: whoever holds the scheduling right will see
/// the envelope.
bool CTroupe_mailbox_push(CTroupe_mailbox *mailbox, CTroupe_envelope *envelope, bool reserved);

/// Pops up to `capacity` envelopes in FIFO order into `out`. The depth counts user envelopes
/// only: system envelopes are pushed with `reserved` and not counted when popped. Consumer
/// only: the thread that holds the scheduling right (checked in debug builds, with no other
/// consumer inside the mailbox at the same time). Returns the count; fewer than `capacity`
/// means the queue was empty at some moment during the call (it stops at the last node), 0
/// means empty or that a producer is in the middle of linking its node. Either way the turn
/// ends with `CTroupe_mailbox_finish_turn`, which looks again and keeps the right (or
/// reschedules) when something came.
size_t CTroupe_mailbox_pop_batch(CTroupe_mailbox *mailbox, CTroupe_envelope **out, size_t capacity);

/// Ends the consumer's turn. Consumer only (checked in debug builds).
/// Returns true when the mailbox is not empty and the caller keeps the scheduling right (it
/// must put the mailbox on a run queue again); false when the right was released: the next
/// push that finds the mailbox empty schedules it.
bool CTroupe_mailbox_finish_turn(CTroupe_mailbox *mailbox);

/// Takes the scheduling right if nobody holds it (used at spawn, to run the start hook). Any
/// thread.
bool CTroupe_mailbox_try_acquire(CTroupe_mailbox *mailbox);

/// Messages pushed and not yet popped, or -1 when the mailbox does not track its depth.
/// Approximate under concurrency (for metrics and load balancing). Any thread.
int64_t CTroupe_mailbox_depth(const CTroupe_mailbox *mailbox);

/// Bounded mailboxes: counts one more user envelope if the depth is below `capacity` (a
/// compare-and-swap loop, so the depth never exceeds it) and returns true; false when full.
/// The caller then pushes with `reserved`. Any thread.
bool CTroupe_mailbox_try_reserve(CTroupe_mailbox *mailbox, int64_t capacity);

/// Drop-oldest mailboxes: removes the oldest user envelope and returns it (the caller owns it
/// and dead-letters it), or NULL when the mailbox holds none. System envelopes in front of it
/// are kept, in order, ahead of everything else. Any thread (takes the pop lock).
CTroupe_envelope *CTroupe_mailbox_drop_oldest(CTroupe_mailbox *mailbox);

/// Whether the mailbox holds no envelope (linearised on the tail). Any thread.
bool CTroupe_mailbox_is_empty(const CTroupe_mailbox *mailbox);
/// Envelopes popped from the mailbox so far (user and system). Any thread; relaxed.
uint64_t CTroupe_mailbox_popped(const CTroupe_mailbox *mailbox);
/// Whether someone holds the scheduling right (the owner is queued or running). A racy
/// observation, for introspection. Any thread.
bool CTroupe_mailbox_is_scheduled(const CTroupe_mailbox *mailbox);

// MARK: - Histograms

enum {
    /// Buckets of a latency histogram: values 0-3 ns one bucket each, then four buckets per
    /// power of two (each a quarter of its octave wide) up to 2^39 ns (about 550 s); the last
    /// bucket (from 1.75 x 2^38 ns) also holds everything larger.
    CTroupe_histogram_bucket_count = 152,
};
/// A latency histogram in nanoseconds: any number of threads record (relaxed atomic adds),
/// any thread reads (a racy but torn-free copy). Opaque; about 1.2 KiB.
typedef struct CTroupe_histogram CTroupe_histogram;
/// A zeroed histogram (calloc); never NULL.
CTroupe_histogram *CTroupe_histogram_create(void);
void CTroupe_histogram_destroy(CTroupe_histogram *histogram);
/// Records one value. Any thread.
void CTroupe_histogram_record(CTroupe_histogram *histogram, uint64_t nanoseconds);
/// Copies count, sum, max and the buckets out (`buckets` has `CTroupe_histogram_bucket_count`
/// entries). Any thread.
void CTroupe_histogram_read(const CTroupe_histogram *histogram, uint64_t *count, uint64_t *sum, uint64_t *max,
                            uint64_t *buckets);
/// The bucket a value falls in, and the smallest value of a bucket.
unsigned CTroupe_histogram_bucket(uint64_t nanoseconds);
uint64_t CTroupe_histogram_bucket_lower_bound(unsigned bucket);

// MARK: - Run queues

/// A worker's run queue of scheduled mailboxes: any thread pushes (wait-free); the owning
/// worker and thieves pop under a try-lock, so pop never blocks.
typedef struct CTroupe_runqueue CTroupe_runqueue;

CTroupe_runqueue *CTroupe_runqueue_create(void);
void CTroupe_runqueue_destroy(CTroupe_runqueue *queue);

/// Pushes a mailbox whose scheduling right the caller holds (checked in debug builds). Any
/// thread.
void CTroupe_runqueue_push(CTroupe_runqueue *queue, CTroupe_mailbox *mailbox);

/// Tries to pop the oldest mailbox: returns its owner pointer, or NULL when the queue is empty
/// or another thread is popping from it right now (a try-pop: it never waits). Any thread; the
/// popper takes over the scheduling right.
void *CTroupe_runqueue_try_pop(CTroupe_runqueue *queue);

/// Whether the queue is empty. Any thread.
bool CTroupe_runqueue_is_empty(const CTroupe_runqueue *queue);

// MARK: - Parking

/// An event count: lets idle workers sleep on a futex without missing a wake-up.
///
/// Sleeper: `epoch = prepare_wait()`, re-check every source of work, then either
/// `cancel_wait()` (work found) or `wait(epoch)`. Waker: publish the work, then `notify`.
/// `notify` costs one load when nobody sleeps.
typedef struct CTroupe_eventcount CTroupe_eventcount;

CTroupe_eventcount *CTroupe_eventcount_create(void);
void CTroupe_eventcount_destroy(CTroupe_eventcount *eventcount);
uint32_t CTroupe_eventcount_prepare_wait(CTroupe_eventcount *eventcount);
void CTroupe_eventcount_cancel_wait(CTroupe_eventcount *eventcount);
/// Sleeps until notified after `prepare_wait` returned `epoch`, or until `timeout_ns` passes
/// (negative: no timeout). Ends the wait (no `cancel_wait` needed afterwards).
void CTroupe_eventcount_wait(CTroupe_eventcount *eventcount, uint32_t epoch, int64_t timeout_ns);
/// Wakes one sleeper (or all when `all`), if any sleeps and not every sleeper already has a
/// wake coming (then no futex call: a burst of notifies costs one wake-up, not one each).
void CTroupe_eventcount_notify(CTroupe_eventcount *eventcount, bool all);
/// Number of threads between prepare_wait and the end of their wait.
uint32_t CTroupe_eventcount_sleepers(const CTroupe_eventcount *eventcount);
/// Wakes issued whose sleepers have not ended their wait yet.
uint32_t CTroupe_eventcount_pending(const CTroupe_eventcount *eventcount);
/// FUTEX_WAKE calls issued since creation (tests, diagnostics).
uint64_t CTroupe_eventcount_wakes(const CTroupe_eventcount *eventcount);

// MARK: - Threads

/// Pins the calling thread to `cpu`. Returns 0 or the pthread error number.
int CTroupe_pin_current_thread(int cpu);

/// Writes the CPUs of the process's affinity mask (ascending) into `out` and returns their
/// count (at most `capacity`), or -errno.
int CTroupe_allowed_cpus(int *out, int capacity);

/// The worker object of the calling thread (set by the scheduler on its threads), or NULL.
void *CTroupe_current_worker(void);
void CTroupe_set_current_worker(void *worker);
/// The job lane (a Swift executor's cell) whose job runs on the calling thread, or NULL:
/// what `checkIsolated` of a Troupe serial executor compares with.
void *CTroupe_current_job_lane(void);
void CTroupe_set_current_job_lane(void *lane);
/// The Troupe task executor (its object's address) that the job running on the calling
/// thread runs with, or NULL: a job it enqueues on a Troupe serial executor runs with the same.
void *CTroupe_current_task_executor(void);
void CTroupe_set_current_task_executor(void *executor);

/// The inline-turns scope (`InlineTurns`) open on the calling thread, or NULL: while one is
/// open, a cell that this thread makes runnable runs here instead of on a worker.
void *CTroupe_current_inline_turns(void);
void CTroupe_set_current_inline_turns(void *scope);

/// Whether the calling thread is releasing the instance of an actor that just stopped (set
/// around that release), so that a `Reply` dropped with it fails its ask as "recipient
/// stopped" rather than "no reply". Thread-local.
bool CTroupe_is_releasing_stopped_actor(void);
void CTroupe_set_releasing_stopped_actor(bool releasing);

/// The error a `Reply` released unanswered on the calling thread fails its ask with, or NULL
/// for the usual "no reply": an unretained box set around `withUnansweredRepliesFailing`'s
/// body, which keeps the box alive. Thread-local.
void *CTroupe_unanswered_reply_error(void);
void CTroupe_set_unanswered_reply_error(void *error);

/// Names a thread (at most 15 bytes). Returns 0 or the pthread error number.
int CTroupe_set_thread_name(unsigned long thread, const char *name);

/// Sets the calling thread's timer slack (how late the kernel may end its timed sleeps, 50 µs
/// by default) to `nanoseconds`; the timer thread uses 1 ns. Returns 0 or errno.
int CTroupe_set_current_thread_timer_slack(unsigned long nanoseconds);

/// Monotonic clock in nanoseconds.
int64_t CTroupe_monotonic_ns(void);

/// A spin-wait hint for the CPU.
void CTroupe_cpu_relax(void);

#ifdef __cplusplus
}
#endif

#endif // CTROUPE_H
