// Sampled latency histograms: log-linear buckets (four per power of two), updated with relaxed
// atomic adds so that workers record into a shared system-wide histogram without a lock, and
// read by introspection on any thread. A reader's copy is not a consistent cut (a concurrent
// record may show in `count` and not yet in its bucket); readers derive counts from the
// buckets, never from `count`, when they need the two to agree.
#include "CTroupe.h"

#include <stdatomic.h>
#include <stdlib.h>

struct CTroupe_histogram {
    _Atomic uint64_t count;
    _Atomic uint64_t sum;
    _Atomic uint64_t max;
    _Atomic uint64_t buckets[CTroupe_histogram_bucket_count];
};

_Static_assert(CTroupe_histogram_bucket_count == 4 + 4 * 37, "values 0-3, then 4 buckets per octave from 2^2 up to 2^39");

unsigned CTroupe_histogram_bucket(uint64_t nanoseconds) {
    if (nanoseconds < 4) return (unsigned)nanoseconds;
    unsigned octave = 63u - (unsigned)__builtin_clzll(nanoseconds);  // >= 2
    unsigned bucket = 4u * (octave - 1u) + (unsigned)((nanoseconds >> (octave - 2u)) & 3u);
    return bucket < CTroupe_histogram_bucket_count ? bucket : CTroupe_histogram_bucket_count - 1;
}

uint64_t CTroupe_histogram_bucket_lower_bound(unsigned bucket) {
    if (bucket < 4) return bucket;
    unsigned octave = bucket / 4u + 1u;
    uint64_t quarter = bucket % 4u;
    return (4u + quarter) << (octave - 2u);
}

CTroupe_histogram *CTroupe_histogram_create(void) {
    CTroupe_histogram *histogram = calloc(1, sizeof(CTroupe_histogram));
    if (histogram == NULL) abort();
    return histogram;
}

void CTroupe_histogram_destroy(CTroupe_histogram *histogram) {
    free(histogram);
}

void CTroupe_histogram_record(CTroupe_histogram *histogram, uint64_t nanoseconds) {
    atomic_fetch_add_explicit(&histogram->buckets[CTroupe_histogram_bucket(nanoseconds)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&histogram->sum, nanoseconds, memory_order_relaxed);
    atomic_fetch_add_explicit(&histogram->count, 1, memory_order_relaxed);
    uint64_t seen = atomic_load_explicit(&histogram->max, memory_order_relaxed);
    while (nanoseconds > seen
           && !atomic_compare_exchange_weak_explicit(&histogram->max, &seen, nanoseconds, memory_order_relaxed,
                                                     memory_order_relaxed)) {
    }
}

void CTroupe_histogram_read(const CTroupe_histogram *histogram, uint64_t *count, uint64_t *sum, uint64_t *max,
                            uint64_t *buckets) {
    *count = atomic_load_explicit(&histogram->count, memory_order_relaxed);
    *sum = atomic_load_explicit(&histogram->sum, memory_order_relaxed);
    *max = atomic_load_explicit(&histogram->max, memory_order_relaxed);
    for (unsigned i = 0; i < CTroupe_histogram_bucket_count; i++) {
        buckets[i] = atomic_load_explicit(&histogram->buckets[i], memory_order_relaxed);
    }
}
