// Actor mailboxes on liburcu's wait-free concurrent queue.
//
// Concurrency contract (the whole scheduling protocol of an actor lives in this file):
// - Any number of producers call CTroupe_mailbox_push concurrently (wait-free enqueue).
// - Exactly one consumer at a time: the thread holding the mailbox's scheduling right
//   (`scheduled == 1`). It alone pops, splices and finishes turns, which gives cds_wfcq the
//   dequeue-side mutual exclusion its synchronisation table requires, and guarantees an actor
//   never runs on two workers at once.
// - The right is taken by exactly one of: a producer whose push found the mailbox empty and
//   whose compare-and-swap on `scheduled` won; the consumer's own finish_turn when messages
//   raced with its release; CTroupe_mailbox_try_acquire at spawn.
// - No lost wake-up: a producer writes the tail (xchg, a full barrier in liburcu's uatomic
//   API) and then reads `scheduled`; the consumer clears `scheduled`, issues a full fence and
//   then reads the tail. In either interleaving one side sees the other, so a pushed message
//   is always followed by a scheduling of the actor.
// - Bounded mailboxes: `depth` counts the user envelopes in the mailbox. A sender reserves one
//   with a compare-and-swap that never takes it above the capacity (CTroupe_mailbox_try_reserve),
//   so the bound holds at every moment, and the consumer pops a bounded mailbox's envelopes one
//   at a time (the Swift turn asks for one), so none wait in a popped batch either.
// - Drop-oldest mailboxes: a sender that finds the mailbox full removes the oldest user
//   envelope itself (CTroupe_mailbox_drop_oldest). Removal needs cds_wfcq's dequeue exclusion,
//   so in these mailboxes every dequeue (the consumer's pops, a sender's drop) happens under
//   `pop_lock`, a spin lock held for a few dequeues at most. System envelopes met on the way
//   to the oldest user envelope are never dropped: they move, in order, to the `held` list,
//   which is older than everything still queued, so the consumer pops it first. `held` counts
//   as content for finish_turn and is_empty, read under the lock (or, in is_empty, through its
//   atomic head), so the scheduling protocol above is unchanged: an envelope is always either
//   in the queue or in `held`.
#include "CTroupe.h"
#include "checks.h"
#include "tsan.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>
#include <urcu/wfcqueue.h>

// The mailbox lives inside its actor's cell, 16-byte aligned, so it cannot be cache-line
// aligned without wasting most of a line per actor. Instead the queue's head and tail are
// exactly 64 bytes apart, which puts them on different cache lines wherever the mailbox
// starts (liburcu measured 2.3-2.6x for separating them); the consumer's other fields are
// next to the head, and some of them may share the tail's line.
struct CTroupe_mailbox {
    // Consumer side: read and written by the worker running the actor.
    struct __cds_wfcq_head head;
    struct cds_wfcq_node runq_link;   // intrusive node: a scheduled mailbox sits on one run queue
    void *owner;                      // unretained Swift cell
    _Atomic uint32_t scheduled;       // SCHEDULED while scheduled or running (see below)
    _Atomic uint32_t pop_lock;        // drop-oldest mailboxes: dequeue exclusion (see above)
    bool tracks_depth;                // immutable after creation
    bool drop_oldest;                 // immutable after creation
    // Drop-oldest mailboxes: system envelopes a sender moved out of the queue, oldest first.
    // Written under pop_lock; the head is atomic for is_empty's unlocked read.
    _Atomic(CTroupe_envelope *) held_head;
    CTroupe_envelope *held_tail;
    // Envelopes popped so far: written by the consumer (relaxed load and store, no
    // read-modify-write), read by introspection. Also puts the tail 64 bytes after the head.
    _Atomic uint64_t popped;
    // Producer side: written by every push.
    struct cds_wfcq_tail tail;
    _Atomic int64_t depth;            // pushed (or reserved) minus popped
};

_Static_assert(sizeof(struct cds_wfcq_node) == sizeof(void *), "cds_wfcq_node is one pointer");
_Static_assert(offsetof(CTroupe_envelope, link) == 0, "an envelope starts with its queue link");
_Static_assert(sizeof(((CTroupe_envelope *)0)->link) == sizeof(struct cds_wfcq_node),
               "the envelope link has the layout of a cds_wfcq_node");
_Static_assert(sizeof(CTroupe_envelope) <= CTroupe_envelope_payload_offset,
               "the payload starts after the header");
_Static_assert(CTroupe_envelope_payload_offset % 16 == 0, "payloads are 16-byte aligned");
// Troupe's inlinable turn (EnvelopeLayout in Envelope.swift) reads the header at these offsets.
_Static_assert(offsetof(CTroupe_envelope, kind) == 8, "EnvelopeLayout.kindOffset");
_Static_assert(offsetof(CTroupe_envelope, ask_token) == 16, "EnvelopeLayout.askTokenOffset");
_Static_assert(offsetof(CTroupe_envelope, side) == 24, "EnvelopeLayout.sideWordOffset");
_Static_assert(sizeof(((CTroupe_envelope *)0)->side) == 8, "the side word is one word");
_Static_assert(CTroupe_envelope_payload_offset == 32, "EnvelopeLayout.payloadOffset");
_Static_assert(CTroupe_envelope_kind_user == 0, "EnvelopeLayout.userKind");
_Static_assert(offsetof(struct CTroupe_mailbox, tail) - offsetof(struct CTroupe_mailbox, head) == 64,
               "head and tail 64 bytes apart: always on different cache lines");
_Static_assert(offsetof(struct CTroupe_mailbox, scheduled) < 64, "scheduling state on the consumer side");
_Static_assert(sizeof(struct CTroupe_mailbox) == 80, "a mailbox is 80 bytes");
_Static_assert(offsetof(struct CTroupe_mailbox, popped) == CTroupe_mailbox_popped_offset,
               "CTroupe_mailbox_popped_offset");
_Static_assert(_Alignof(struct CTroupe_mailbox) <= 16, "a mailbox fits any 16-byte-aligned storage");

_Static_assert(sizeof(struct CTroupe_mailbox) <= CTroupe_mailbox_storage_size, "mailbox storage too small");

// `scheduled`'s values. SCHEDULED is the scheduling right. Debug builds also set CONSUMING
// while the right's holder is inside pop_batch or finish_turn, so that a second thread
// entering as consumer (two holders: a broken protocol) is caught at once. Producers only ever
// compare the whole word with 0, which CONSUMING never turns into a different answer: it is set
// only while SCHEDULED is.
enum { SCHEDULED = 1, CONSUMING = 2 };

#ifdef CTROUPE_DEBUG_CHECKS
static void consumer_enter(CTroupe_mailbox *mailbox) {
    uint32_t before = atomic_fetch_or_explicit(&mailbox->scheduled, CONSUMING, memory_order_relaxed);
    CTROUPE_CHECK(before & SCHEDULED, "a mailbox is consumed only by the holder of its scheduling right");
    CTROUPE_CHECK(!(before & CONSUMING), "one consumer at a time per mailbox");
}
static void consumer_leave(CTroupe_mailbox *mailbox) {
    atomic_fetch_and_explicit(&mailbox->scheduled, ~(uint32_t)CONSUMING, memory_order_relaxed);
}
#else
static inline void consumer_enter(CTroupe_mailbox *mailbox) { (void)mailbox; }
static inline void consumer_leave(CTroupe_mailbox *mailbox) { (void)mailbox; }
#endif

CTroupe_mailbox *CTroupe_mailbox_init(void *storage, void *owner, bool tracks_depth, bool drop_oldest) {
    CTroupe_mailbox *mailbox = (CTroupe_mailbox *)storage;
    __cds_wfcq_init(&mailbox->head, &mailbox->tail);
    cds_wfcq_node_init(&mailbox->runq_link);
    mailbox->owner = owner;
    atomic_init(&mailbox->scheduled, 0);
    atomic_init(&mailbox->pop_lock, 0);
    atomic_init(&mailbox->depth, 0);
    atomic_init(&mailbox->popped, 0);
    atomic_init(&mailbox->held_head, NULL);
    mailbox->held_tail = NULL;
    mailbox->tracks_depth = tracks_depth || drop_oldest;
    mailbox->drop_oldest = drop_oldest;
    return mailbox;
}

// MARK: Drop-oldest exclusion

static void lock_pops(CTroupe_mailbox *mailbox) {
    for (unsigned spins = 0;; spins++) {
        if (atomic_load_explicit(&mailbox->pop_lock, memory_order_relaxed) == 0
            && atomic_exchange_explicit(&mailbox->pop_lock, 1, memory_order_acquire) == 0)
            return;
        // Held for a few dequeues: spin, then yield in case the holder was preempted.
        if (spins < 64) CTroupe_cpu_relax(); else sched_yield();
    }
}

static void unlock_pops(CTroupe_mailbox *mailbox) {
    atomic_store_explicit(&mailbox->pop_lock, 0, memory_order_release);
}

static bool held_is_empty(CTroupe_mailbox *mailbox) {
    return atomic_load_explicit(&mailbox->held_head, memory_order_acquire) == NULL;
}

// Under pop_lock.
static CTroupe_envelope *pop_held(CTroupe_mailbox *mailbox) {
    CTroupe_envelope *first = atomic_load_explicit(&mailbox->held_head, memory_order_relaxed);
    if (first == NULL) return NULL;
    atomic_store_explicit(&mailbox->held_head, first->link, memory_order_release);
    if (first->link == NULL) mailbox->held_tail = NULL;
    first->link = NULL;
    return first;
}

// Under pop_lock.
static void append_held(CTroupe_mailbox *mailbox, CTroupe_envelope *envelope) {
    envelope->link = NULL;
    if (mailbox->held_tail == NULL) {
        atomic_store_explicit(&mailbox->held_head, envelope, memory_order_release);
    } else {
        mailbox->held_tail->link = envelope;
    }
    mailbox->held_tail = envelope;
}

bool CTroupe_mailbox_try_reserve(CTroupe_mailbox *mailbox, int64_t capacity) {
    int64_t depth = atomic_load_explicit(&mailbox->depth, memory_order_relaxed);
    while (depth < capacity) {
        if (atomic_compare_exchange_weak_explicit(&mailbox->depth, &depth, depth + 1,
                                                  memory_order_relaxed, memory_order_relaxed))
            return true;
    }
    return false;
}

CTroupe_envelope *CTroupe_mailbox_drop_oldest(CTroupe_mailbox *mailbox) {
    CTroupe_envelope *dropped = NULL;
    lock_pops(mailbox);
    for (;;) {
        // Blocking dequeue: a producer between its tail exchange and its link store is waited
        // for (a few instructions), so an envelope is never skipped.
        struct cds_wfcq_node *node = __cds_wfcq_dequeue_blocking(&mailbox->head, &mailbox->tail);
        if (node == NULL) break;
        CTROUPE_TSAN_ACQUIRE(node);
        CTroupe_envelope *envelope = (CTroupe_envelope *)node;
        if (envelope->kind == CTroupe_envelope_kind_user) {
            dropped = envelope;
            break;
        }
        append_held(mailbox, envelope);
    }
    unlock_pops(mailbox);
    if (dropped != NULL) {
        atomic_fetch_sub_explicit(&mailbox->depth, 1, memory_order_relaxed);
        dropped->link = NULL;
    }
    return dropped;
}

void *CTroupe_mailbox_owner(const CTroupe_mailbox *mailbox) {
    return mailbox->owner;
}

bool CTroupe_mailbox_push(CTroupe_mailbox *mailbox, CTroupe_envelope *envelope, bool reserved) {
    if (mailbox->tracks_depth && !reserved) atomic_fetch_add_explicit(&mailbox->depth, 1, memory_order_relaxed);
    struct cds_wfcq_node *node = (struct cds_wfcq_node *)envelope;
    // cds_wfcq_node_init, without a call into the shared library: the link is the node.
    envelope->link = NULL;
    CTROUPE_TSAN_RELEASE(envelope);
    // Returns false when the queue was empty before this push.
    if (cds_wfcq_enqueue(&mailbox->head, &mailbox->tail, node)) return false;
    // The enqueue's xchg on the tail is a full barrier, so this load cannot be satisfied
    // before the tail write is visible (see the no-lost-wake-up argument above). Reading first
    // skips the locked instruction when the actor is already scheduled or running.
    if (atomic_load_explicit(&mailbox->scheduled, memory_order_relaxed) != 0) return false;
    uint32_t expected = 0;
    return atomic_compare_exchange_strong_explicit(&mailbox->scheduled, &expected, SCHEDULED,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

// The consumer counts what it pops (it is the only writer).
static inline void count_popped(CTroupe_mailbox *mailbox, size_t count) {
    atomic_store_explicit(&mailbox->popped, atomic_load_explicit(&mailbox->popped, memory_order_relaxed) + count,
                          memory_order_relaxed);
}

static size_t pop_unlocked(CTroupe_mailbox *mailbox, CTroupe_envelope **out, size_t capacity);

static size_t pop_locked(CTroupe_mailbox *mailbox, CTroupe_envelope **out, size_t capacity) {
    size_t count = 0;
    int64_t user = 0;
    lock_pops(mailbox);
    while (count < capacity) {
        CTroupe_envelope *envelope = pop_held(mailbox);
        if (envelope == NULL) {
            struct cds_wfcq_node *node = __cds_wfcq_dequeue_nonblocking(&mailbox->head, &mailbox->tail);
            if (node == NULL || node == CDS_WFCQ_WOULDBLOCK) break;
            CTROUPE_TSAN_ACQUIRE(node);
            envelope = (CTroupe_envelope *)node;
        }
        user += envelope->kind == CTroupe_envelope_kind_user;
        out[count++] = envelope;
    }
    unlock_pops(mailbox);
    if (user != 0) atomic_fetch_sub_explicit(&mailbox->depth, user, memory_order_relaxed);
    count_popped(mailbox, count);
    return count;
}

size_t CTroupe_mailbox_pop_batch(CTroupe_mailbox *mailbox, CTroupe_envelope **out, size_t capacity) {
    consumer_enter(mailbox);
    size_t count = __builtin_expect(mailbox->drop_oldest, 0) ? pop_locked(mailbox, out, capacity)
                                                              : pop_unlocked(mailbox, out, capacity);
    consumer_leave(mailbox);
    return count;
}

static size_t pop_unlocked(CTroupe_mailbox *mailbox, CTroupe_envelope **out, size_t capacity) {
    size_t count = 0;
    int64_t user = 0;
    while (count < capacity) {
        int state = 0;
        struct cds_wfcq_node *node = __cds_wfcq_dequeue_with_state_nonblocking(&mailbox->head, &mailbox->tail, &state);
        if (node == NULL || node == CDS_WFCQ_WOULDBLOCK) break;
        CTROUPE_TSAN_ACQUIRE(node);
        CTroupe_envelope *envelope = (CTroupe_envelope *)node;
        user += envelope->kind == CTroupe_envelope_kind_user;
        out[count++] = envelope;
        // That was the last node: the queue is empty. Not dequeuing again saves a call that
        // would find nothing; a push that lands now is seen by CTroupe_mailbox_finish_turn.
        if (state & CDS_WFCQ_STATE_LAST) break;
    }
    // System envelopes are pushed uncounted (they never take a bounded mailbox's capacity).
    if (user != 0 && mailbox->tracks_depth) atomic_fetch_sub_explicit(&mailbox->depth, user, memory_order_relaxed);
    count_popped(mailbox, count);
    return count;
}

uint64_t CTroupe_mailbox_popped(const CTroupe_mailbox *mailbox) {
    return atomic_load_explicit(&((CTroupe_mailbox *)mailbox)->popped, memory_order_relaxed);
}

// Whether the queue and the held list are both empty; for drop-oldest mailboxes under the
// lock, so that an envelope a sender is moving from the queue to `held` is seen in one of them.
static bool content_is_empty(CTroupe_mailbox *mailbox) {
    if (__builtin_expect(!mailbox->drop_oldest, 1)) return cds_wfcq_empty(&mailbox->head, &mailbox->tail);
    lock_pops(mailbox);
    bool empty = held_is_empty(mailbox) && cds_wfcq_empty(&mailbox->head, &mailbox->tail);
    unlock_pops(mailbox);
    return empty;
}

bool CTroupe_mailbox_finish_turn(CTroupe_mailbox *mailbox) {
    consumer_enter(mailbox);
    bool empty = content_is_empty(mailbox);
    consumer_leave(mailbox);
    if (!empty) return true;
    atomic_store_explicit(&mailbox->scheduled, 0, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    if (content_is_empty(mailbox)) return false;
    // A push landed between the check and the release; it or we schedule, exactly once.
    uint32_t expected = 0;
    return atomic_compare_exchange_strong_explicit(&mailbox->scheduled, &expected, SCHEDULED,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

bool CTroupe_mailbox_try_acquire(CTroupe_mailbox *mailbox) {
    uint32_t expected = 0;
    return atomic_compare_exchange_strong_explicit(&mailbox->scheduled, &expected, SCHEDULED,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

int64_t CTroupe_mailbox_depth(const CTroupe_mailbox *mailbox) {
    if (!mailbox->tracks_depth) return -1;
    int64_t depth = atomic_load_explicit(&((CTroupe_mailbox *)mailbox)->depth, memory_order_relaxed);
    return depth < 0 ? 0 : depth;
}

bool CTroupe_mailbox_is_empty(const CTroupe_mailbox *mailbox) {
    CTroupe_mailbox *m = (CTroupe_mailbox *)mailbox;
    return cds_wfcq_empty(&m->head, &m->tail) && (!m->drop_oldest || held_is_empty(m));
}

bool CTroupe_mailbox_is_scheduled(const CTroupe_mailbox *mailbox) {
    return atomic_load_explicit(&mailbox->scheduled, memory_order_relaxed) != 0;
}

// MARK: - Run queues (same queue, same contract: wait-free push, popping under a try-lock)

struct CTroupe_runqueue {
    struct __cds_wfcq_head head;
    _Atomic uint32_t popping;         // try-lock giving poppers cds_wfcq's dequeue exclusion
    alignas(64) struct cds_wfcq_tail tail;
};

_Static_assert(offsetof(struct CTroupe_runqueue, tail) == 64, "run queue head and tail on separate cache lines");

CTroupe_runqueue *CTroupe_runqueue_create(void) {
    CTroupe_runqueue *queue = aligned_alloc(64, sizeof(CTroupe_runqueue));
    if (queue == NULL) abort();
    __cds_wfcq_init(&queue->head, &queue->tail);
    atomic_init(&queue->popping, 0);
    return queue;
}

void CTroupe_runqueue_destroy(CTroupe_runqueue *queue) {
    free(queue);
}

void CTroupe_runqueue_push(CTroupe_runqueue *queue, CTroupe_mailbox *mailbox) {
    CTROUPE_CHECK(atomic_load_explicit(&mailbox->scheduled, memory_order_relaxed) & SCHEDULED,
                  "only the holder of a mailbox's scheduling right puts it on a run queue");
    cds_wfcq_node_init(&mailbox->runq_link);
    CTROUPE_TSAN_RELEASE(mailbox);
    cds_wfcq_enqueue(&queue->head, &queue->tail, &mailbox->runq_link);
}

void *CTroupe_runqueue_try_pop(CTroupe_runqueue *queue) {
    if (cds_wfcq_empty(&queue->head, &queue->tail)) return NULL;
    if (atomic_exchange_explicit(&queue->popping, 1, memory_order_acquire) != 0) return NULL;
    struct cds_wfcq_node *node = __cds_wfcq_dequeue_nonblocking(&queue->head, &queue->tail);
    atomic_store_explicit(&queue->popping, 0, memory_order_release);
    if (node == NULL || node == CDS_WFCQ_WOULDBLOCK) return NULL;
    CTroupe_mailbox *mailbox = caa_container_of(node, CTroupe_mailbox, runq_link);
    CTROUPE_TSAN_ACQUIRE(mailbox);
    CTROUPE_CHECK(atomic_load_explicit(&mailbox->scheduled, memory_order_relaxed) & SCHEDULED,
                  "a mailbox on a run queue holds its scheduling right");
    return mailbox->owner;
}

bool CTroupe_runqueue_is_empty(const CTroupe_runqueue *queue) {
    CTroupe_runqueue *q = (CTroupe_runqueue *)queue;
    return cds_wfcq_empty(&q->head, &q->tail);
}
