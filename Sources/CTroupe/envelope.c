// The envelope allocator: size-classed, per-thread free lists with batched hand-over.
//
// Steady-state messaging allocates nothing: a sender pops an envelope from its thread's free
// list, the consumer pushes it onto its own thread's list after the handler ran. Lists move
// between threads a batch at a time through one mutex-protected stack per size class, so the
// lock is taken once per `BATCH` envelopes, never per message.
//
// Concurrency contract:
// - `local` (thread-local) is touched only by its thread.
// - `shared[class]` is touched only under `shared_lock[class]`; the mutex also orders the
//   envelopes' previous contents before their reuse on another thread (visible to TSan).
// - A thread that exits returns its lists to the shared stacks (pthread key destructor).
// - Sampling (the time-in-mailbox histograms): `sampling_counts` and `sampling_interval` are
//   written under `sampling_lock` by systems starting and shutting down; senders read
//   `sampling_interval` (relaxed) only when their thread's countdown runs out, so a change
//   reaches a thread within one countdown.
#include "CTroupe.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

enum { CLASS_COUNT = 6, BATCH = 128, LOCAL_LIMIT = 2 * BATCH, LARGE_CLASS = 0xff };

static const size_t class_sizes[CLASS_COUNT] = { 64, 128, 256, 512, 1024, 2048 + CTroupe_envelope_payload_offset };
_Static_assert(CTroupe_envelope_max_pooled_size + CTroupe_envelope_payload_offset == 2048 + CTroupe_envelope_payload_offset,
               "the largest class holds the largest pooled payload");

typedef struct {
    CTroupe_envelope *head;   // linked through `link`
    uint32_t count;
} free_list;

typedef struct {
    free_list lists[CLASS_COUNT];
    uint32_t slab_bytes[CLASS_COUNT];  // size of the thread's next slab of each class (0: the first)
    bool registered;          // the exit destructor is armed
    int32_t sample_countdown; // envelopes until the next one is stamped (or the interval is re-read)
} local_cache;

// A batch is a list of envelopes; the first envelope's `ask_token` links batches on the shared
// stack and its `side.batch_length` holds the batch's length.
static CTroupe_envelope *shared[CLASS_COUNT];
static pthread_mutex_t shared_lock[CLASS_COUNT] = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
};
static _Atomic uint64_t fresh_allocations;
static _Thread_local uint64_t thread_fresh_allocations;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static _Thread_local local_cache local;

// MARK: Sampling

// Intervals are powers of two up to 2^20; a system that samples counts itself in the slot of
// its interval, and the process stamps at the smallest interval any system asked for.
enum { SAMPLING_SLOTS = 21, UNSAMPLED_RECHECK = 1024 };
static pthread_mutex_t sampling_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t sampling_counts[SAMPLING_SLOTS];
static _Atomic uint32_t sampling_interval;  // 0: nobody samples

static unsigned sampling_slot(uint32_t interval) {
    return interval <= 1 ? 0 : 32u - (unsigned)__builtin_clz(interval - 1);
}

static void publish_sampling_interval(void) {
    uint32_t interval = 0;
    for (unsigned slot = 0; slot < SAMPLING_SLOTS; slot++) {
        if (sampling_counts[slot] > 0) {
            interval = 1u << slot;
            break;
        }
    }
    atomic_store_explicit(&sampling_interval, interval, memory_order_relaxed);
}

void CTroupe_sampling_begin(uint32_t interval) {
    pthread_mutex_lock(&sampling_lock);
    sampling_counts[sampling_slot(interval)] += 1;
    publish_sampling_interval();
    pthread_mutex_unlock(&sampling_lock);
}

void CTroupe_sampling_end(uint32_t interval) {
    pthread_mutex_lock(&sampling_lock);
    unsigned slot = sampling_slot(interval);
    if (sampling_counts[slot] > 0) sampling_counts[slot] -= 1;
    publish_sampling_interval();
    pthread_mutex_unlock(&sampling_lock);
}

uint32_t CTroupe_sampling_interval(void) {
    return atomic_load_explicit(&sampling_interval, memory_order_relaxed);
}

// The thread's countdown ran out: stamp this envelope if anyone samples, and start the next
// countdown (the interval, or a re-check of it later when nobody samples).
__attribute__((noinline)) static uint64_t sample_stamp(void) {
    uint32_t interval = atomic_load_explicit(&sampling_interval, memory_order_relaxed);
    if (interval == 0) {
        local.sample_countdown = UNSAMPLED_RECHECK;
        return 0;
    }
    local.sample_countdown = (int32_t)interval;
    // Odd: the word may also hold a context annotation's (even) address; see `side`.
    return (uint64_t)CTroupe_monotonic_ns() | 1;
}

// The countdown ran out on this envelope: stamp it. Out of line and reached by a tail call, so
// that the allocation's fast path saves no register.
__attribute__((noinline)) static CTroupe_envelope *stamped(CTroupe_envelope *envelope) {
    envelope->side.sent_at = sample_stamp();
    return envelope;
}

// Every allocation writes `side.sent_at`: 0, or the send time of one envelope in `interval`. The
// countdown is decremented in place and its new value tested (one instruction and a branch).
static inline CTroupe_envelope *stamp(CTroupe_envelope *envelope) {
    int32_t left = local.sample_countdown - 1;
    local.sample_countdown = left;
    if (__builtin_expect(left > 0, 1)) {
        envelope->side.sent_at = 0;
        return envelope;
    }
    return stamped(envelope);
}

static void push_batch(unsigned cls, CTroupe_envelope *first, uint32_t count) {
    first->side.batch_length = count;
    pthread_mutex_lock(&shared_lock[cls]);
    first->ask_token = shared[cls];
    shared[cls] = first;
    pthread_mutex_unlock(&shared_lock[cls]);
}

static void return_local_lists(void *unused) {
    (void)unused;
    for (unsigned cls = 0; cls < CLASS_COUNT; cls++) {
        free_list *list = &local.lists[cls];
        if (list->head != NULL) push_batch(cls, list->head, list->count);
        list->head = NULL;
        list->count = 0;
    }
}

static void make_exit_key(void) {
    if (pthread_key_create(&exit_key, return_local_lists) != 0) abort();
}

static void register_thread(void) {
    pthread_once(&exit_key_once, make_exit_key);
    // Any non-NULL value arms the destructor for this thread.
    pthread_setspecific(exit_key, &local);
    local.registered = true;
}

// The smallest class that holds `total` bytes, or CLASS_COUNT when none does: powers of two
// from 64 to 1024, then one class for the largest pooled payload. No loop: a message's size
// is fixed by its type, but the call is made from Swift with the size as an argument.
static inline unsigned class_for(size_t total) {
    if (total <= 64) return 0;
    unsigned cls = 58u - (unsigned)__builtin_clzll((unsigned long long)(total - 1));
    if (cls < CLASS_COUNT - 1) return cls;
    return total <= class_sizes[CLASS_COUNT - 1] ? CLASS_COUNT - 1 : CLASS_COUNT;
}

// Envelopes carved from one malloc when a thread finds no envelope of a class anywhere: a
// burst that outruns the consumer (a flood into an unbounded mailbox) then costs one malloc
// per slab instead of one per message. A thread's slabs of a class double from 16 KiB up to
// 1 MiB, so a long flood makes a few dozen mallocs, while a thread that needs few envelopes
// sets aside little. Envelopes are never given back to malloc, so a slab is never freed
// either; its envelopes circulate like any other.
enum { FIRST_SLAB_BYTES = 16384, LARGEST_SLAB_BYTES = 1 << 20 };

static CTroupe_envelope *carve_slab(unsigned cls, free_list *list) {
    size_t size = class_sizes[cls];
    uint32_t slab_bytes = local.slab_bytes[cls] == 0 ? FIRST_SLAB_BYTES : local.slab_bytes[cls];
    if (slab_bytes < LARGEST_SLAB_BYTES) local.slab_bytes[cls] = slab_bytes * 2;
    else local.slab_bytes[cls] = slab_bytes;
    size_t count = slab_bytes / size;
    if (count < 2) count = 2;
    unsigned char *slab = malloc(size * count);
    if (slab == NULL) abort();
    atomic_fetch_add_explicit(&fresh_allocations, 1, memory_order_relaxed);
    thread_fresh_allocations += 1;
    // The first envelope is returned; the others become the thread's list (it was empty).
    for (size_t i = 1; i < count; i++) {
        CTroupe_envelope *envelope = (CTroupe_envelope *)(slab + i * size);
        envelope->size_class = cls;
        envelope->link = i + 1 < count ? (CTroupe_envelope *)(slab + (i + 1) * size) : NULL;
    }
    list->head = (CTroupe_envelope *)(slab + size);
    list->count = (uint32_t)(count - 1);
    CTroupe_envelope *first = (CTroupe_envelope *)slab;
    first->size_class = cls;
    return first;
}

// The thread's list of the class is empty (or the payload is too large for any class).
__attribute__((noinline)) static CTroupe_envelope *alloc_slowly(size_t total, unsigned cls) {
    if (cls == CLASS_COUNT) {
        CTroupe_envelope *envelope = malloc(total);
        if (envelope == NULL) abort();
        atomic_fetch_add_explicit(&fresh_allocations, 1, memory_order_relaxed);
        thread_fresh_allocations += 1;
        envelope->size_class = LARGE_CLASS;
        return stamp(envelope);
    }
    if (!local.registered) register_thread();
    free_list *list = &local.lists[cls];
    // Refill from the shared stack: the whole batch becomes this thread's list.
    pthread_mutex_lock(&shared_lock[cls]);
    CTroupe_envelope *batch = shared[cls];
    if (batch != NULL) shared[cls] = batch->ask_token;
    pthread_mutex_unlock(&shared_lock[cls]);
    if (batch != NULL) {
        list->head = batch->link;
        list->count = (uint32_t)batch->side.batch_length - 1;
        batch->size_class = cls;
        return stamp(batch);
    }
    return stamp(carve_slab(cls, list));
}

// Fast path: a pop from the thread's own list, no call, no saved registers.
CTroupe_envelope *CTroupe_envelope_alloc(size_t payload_size) {
    size_t total = payload_size + CTroupe_envelope_payload_offset;
    unsigned cls = class_for(total);
    if (__builtin_expect(cls < CLASS_COUNT, 1)) {
        free_list *list = &local.lists[cls];
        CTroupe_envelope *envelope = list->head;
        if (__builtin_expect(envelope != NULL, 1)) {
            list->head = envelope->link;
            list->count -= 1;
            return stamp(envelope);
        }
    }
    return alloc_slowly(total, cls);
}

// The thread's list is full (or unregistered, or the envelope is a large one).
__attribute__((noinline)) static void free_slowly(CTroupe_envelope *envelope, unsigned cls) {
    if (cls == LARGE_CLASS) {
        free(envelope);
        return;
    }
    if (!local.registered) register_thread();
    free_list *list = &local.lists[cls];
    if (list->count >= LOCAL_LIMIT) {
        // Hand the older half over as one batch: the first BATCH envelopes after the head stay.
        CTroupe_envelope *keep_last = list->head;
        for (uint32_t i = 1; i < BATCH; i++) keep_last = keep_last->link;
        CTroupe_envelope *given = keep_last->link;
        keep_last->link = NULL;
        push_batch(cls, given, list->count - BATCH);
        list->count = BATCH;
    }
    envelope->link = list->head;
    list->head = envelope;
    list->count += 1;
}

// Fast path: a push onto the thread's own list, no call, no saved registers.
void CTroupe_envelope_free(CTroupe_envelope *envelope) {
    unsigned cls = envelope->size_class;
    if (__builtin_expect(cls < CLASS_COUNT && local.registered, 1)) {
        free_list *list = &local.lists[cls];
        if (__builtin_expect(list->count < LOCAL_LIMIT, 1)) {
            envelope->link = list->head;
            list->head = envelope;
            list->count += 1;
            return;
        }
    }
    free_slowly(envelope, cls);
}

uint64_t CTroupe_envelope_thread_fresh_allocations(void) {
    return thread_fresh_allocations;
}

uint64_t CTroupe_envelope_fresh_allocations(void) {
    return atomic_load_explicit(&fresh_allocations, memory_order_relaxed);
}
