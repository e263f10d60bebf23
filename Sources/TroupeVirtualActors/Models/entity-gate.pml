/*
 * The gate of an entity's slot (Sources/TroupeVirtualActors/Directory/EntityGate.swift) with the
 * region's use of it (EntityRegion, RegionState), for the spin model checker. Run by
 * scripts/model-check.sh.
 *
 * Modelled: the gate's word as its three fields (closed, claimed, senders inside), which change
 * together in one atomic step as in the Swift's single 64-bit word (the send counter only feeds
 * the idle sweep and is left out). Senders enter (fetch-add, then look at `closed`), read the
 * current activation, send one message to its mailbox, and leave (fetch-sub, then claim if the
 * gate is closed with nobody inside); a sender that finds the gate closed leaves at once (its
 * leave may claim too). The directory closes the gate (fetch-or, then claim), waits until the
 * slot is drained, stops the activation (the stop goes into its mailbox after every message
 * already there), makes the next activation and opens the gate (fetch-and, releasing), NCYCLE
 * times. A claim is the compare-exchange loop of EntityGate.claim, as one atomic step: it
 * succeeds only on "closed, not claimed, nobody inside".
 *
 * Memory model: every shared access is one atomic Promela step (sequential consistency). The
 * Swift uses read-modify-writes for every access the argument needs (x86-64: locked
 * instructions), and the activation is read after the acquiring enter and written before the
 * releasing open, as here.
 *
 * Properties (safety; an invalid end state is a hang):
 * - no message is lost: a sender inside an open gate never sends to an activation that has
 *   been stopped (the stop would have been queued before its message);
 * - one claim per close, and none on an open gate;
 * - every close is claimed: the directory always gets its "drained" and finishes all cycles;
 * - the count of senders inside never goes below zero.
 *
 * Deliberately broken variants (each must make spin report an error):
 *   -DBROKEN_CLOSE_CLAIMS      close claims at once, whoever is inside
 *   -DBROKEN_LEAVE_NO_CLAIM    a leaving sender never claims (only the closer does)
 *   -DBROKEN_OPEN_RESETS       open stores a fresh word (senders inside forgotten) instead of
 *                              clearing the two flags
 */

#ifndef NSEND
#define NSEND 2
#endif
#ifndef NMSG
#define NMSG 2
#endif
#ifndef NCYCLE
#define NCYCLE 2
#endif

bool closed = true;     /* a new gate is closed and claimed: no activation yet */
bool claimed = true;
byte inside = 0;
byte generation = 0;    /* the current activation */
bool stopped[NCYCLE + 1];
bool drained = false;
byte claims = 0;        /* claims during the current close */

inline try_claim() {
    atomic {
        if
        :: closed && !claimed && inside == 0 ->
            claimed = true;
            claims++;
            assert(claims == 1);
            drained = true
        :: else -> skip
        fi
    }
}

proctype Sender() {
    byte sent = 0;
    byte seen;
    bool open;
    do
    :: sent < NMSG ->
        atomic { inside++; open = !closed }
        if
        :: open ->
            seen = generation;
            /* the send: the activation it read must not have been stopped */
            assert(!stopped[seen]);
            sent++;
            atomic { assert(inside > 0); inside-- }
#ifndef BROKEN_LEAVE_NO_CLAIM
            try_claim()
#endif
        :: else ->
            atomic { assert(inside > 0); inside-- }
#ifndef BROKEN_LEAVE_NO_CLAIM
            try_claim()
#endif
            /* the slow path: buffered for the next activation (not modelled further) */
            sent++
        fi
    :: else -> break
    od
}

proctype Directory() {
    byte cycle = 0;
    /* the first activation: the gate opens */
    atomic {
        generation = 0;
#ifdef BROKEN_OPEN_RESETS
        inside = 0;
#endif
        closed = false; claimed = false
    }
    do
    :: cycle < NCYCLE ->
        drained = false;
        claims = 0;
        atomic { assert(!closed); closed = true }
#ifdef BROKEN_CLOSE_CLAIMS
        atomic { claimed = true; claims++; drained = true }
#else
        try_claim();
#endif
        drained;                              /* RegionState.drained, by whoever claimed */
        stopped[generation] = true;           /* the stop, behind every message sent */
        atomic {
            generation++;                     /* the next activation, then the gate opens */
#ifdef BROKEN_OPEN_RESETS
            inside = 0;
#endif
            assert(closed && claimed);
            closed = false; claimed = false
        }
        cycle++
    :: else -> break
    od
}

init {
    byte i;
    atomic {
        i = 0;
        do
        :: i < NSEND -> run Sender(); i++
        :: else -> break
        od;
        run Directory()
    }
}
