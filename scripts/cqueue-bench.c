// CTroupe's C layer alone: one thread allocates an envelope, pushes it into a mailbox, and
// pops and frees in batches of 64 (the worker's turn), 20 M times. Built twice by
// scripts/measure-inline-urcu.sh: calling liburcu's shared library, and with _LGPL_SOURCE.
#include "CTroupe.h"
#include <stdio.h>

int main(void) {
    CTroupe_mailbox *mailbox = CTroupe_mailbox_create(NULL, false);
    const long total = 20000000;
    CTroupe_envelope *batch[64];
    long popped = 0;
    int64_t start = CTroupe_monotonic_ns();
    for (long i = 0; i < total; i += 64) {
        for (int j = 0; j < 64; j++) CTroupe_mailbox_push(mailbox, CTroupe_envelope_alloc(8), false);
        size_t count = CTroupe_mailbox_pop_batch(mailbox, batch, 64);
        for (size_t k = 0; k < count; k++) CTroupe_envelope_free(batch[k]);
        popped += (long)count;
    }
    int64_t elapsed = CTroupe_monotonic_ns() - start;
    if (popped != total) {
        fprintf(stderr, "WRONG RESULT: popped %ld of %ld\n", popped, total);
        return 1;
    }
    printf("%.1f ns per message (push + pop + envelope alloc/free, one thread)\n", (double)elapsed / total);
    return 0;
}
