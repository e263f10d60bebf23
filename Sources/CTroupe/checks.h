// Contract checks for the C layer, compiled in debug builds only.
//
// `Package.swift` defines CTROUPE_DEBUG_CHECKS for the debug configuration, so the test suite
// (a debug build) runs with every check on, and release builds compile them out entirely (no
// extra instruction on the hot path). A failed check names the contract and aborts: it is a
// bug in Troupe, never a user error, so there is nothing to recover.
#ifndef CTROUPE_CHECKS_H
#define CTROUPE_CHECKS_H

#ifdef CTROUPE_DEBUG_CHECKS
#  include <stdio.h>
#  include <stdlib.h>
#  define CTROUPE_CHECK(condition, contract)                                                   \
    do {                                                                                        \
        if (!(condition)) {                                                                     \
            fprintf(stderr, "CTroupe contract violated at %s:%d: %s\n", __FILE__, __LINE__,    \
                    contract);                                                                  \
            abort();                                                                            \
        }                                                                                       \
    } while (0)
#else
#  define CTROUPE_CHECK(condition, contract) ((void)0)
#endif

#endif
