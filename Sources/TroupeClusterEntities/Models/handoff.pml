/*
 * The ordered handoff of TroupeClusterEntities (Sources/TroupeClusterEntities/Placement/
 * Handoff.swift and ClusterEntityRegion+Routing.swift), for the spin model checker. Run by
 * scripts/model-check.sh.
 *
 * Modelled: three nodes and one identity K whose owner moves from node OLD to node NEW when the
 * members change (a join of NEW, or a leave of OLD: the same steps). Each node adopts the new
 * owners at a moment of its own (-DJOIN: NEW is born with them). Between every two nodes a FIFO
 * line carries entity messages, markers and confirmations, as an Outbox does. SENDER sends NMSG
 * numbered messages to K, each routed by its view at that moment (SENDER may be any node:
 * -DSENDER=0 or 1 are the local paths of the old and the new owner). A node that receives a
 * message routes it by its own view: on to the owner (marked forwarded), or delivered here.
 * Delivering here, while the node's handoff is not settled, holds the message when K has no
 * running activation here or messages for K are held or being routed by a flush; otherwise it
 * activates K if needed and hands it the message (an activation handles in order; handling is
 * the delivery step). On adopting the new owners a node sends its marker on every line. Once it
 * has both other markers and K no longer runs here unless it owns K, it sends the messages it
 * holds for K to their owner when that is not itself (marked forwarded), then its confirmation
 * on every line. With both other confirmations a node flushes: it takes what it holds, forwarded
 * messages first, and routes them one step at a time (new arrivals queue behind them), then is
 * settled. A node passivates K (any moment after adopting, if it no longer owns K).
 *
 * Memory model: each step is one atomic Promela step; a node's steps are those of one region,
 * which in the Swift take the placement's lock for each decision. A route step is atomic here; in
 * the Swift a send reads the members, then queues on a line, and a line that carried a newer
 * view's marker in between refuses it (Outbox.send(_:routedBy:)), so the sender routes it again:
 * the same as this atomic step. Not modelled: several changes of members at once, the handoff
 * timeout.
 *
 * Properties (safety; an invalid end state is a hang):
 * - one activation of K at a time, across the three nodes;
 * - SENDER's messages are handled in the order sent, each once (-DNO_ORDER: each once, in any
 *   order);
 * - at the end (no step left), every message was handled and every node has settled.
 *
 * Which changes: -DJOIN, NEW joins (born with the new owners, the others adopt them in any
 * order); -DLEAVE, OLD leaves (it announces it, the others adopt the new owners in any order,
 * OLD last, as ClusterEntityRegion.leave does). Neither: every node adopts at a moment of its
 * own. All three keep one activation at a time, lose nothing and keep SENDER's order, for any
 * SENDER (scripts/model-check.sh).
 *
 * Parking: a message that comes on a line after that line's marker of owners this node has
 * not adopted was routed by owners newer than this node's: it waits, in order, until this node
 * adopts them. Without it (-DBROKEN_NO_PARKING), a third node's message can reach NEW before NEW
 * has heard of a leave, be sent to OLD, and come back behind a message that the same sender
 * had sent OLD earlier: both reach NEW as forwarded messages, in the order OLD read its lines.
 *
 * Deliberately broken variants (each must make spin report an error):
 *   -DBROKEN_NO_HOLD           deliver at once while unsettled (no holding)
 *   -DBROKEN_NO_MARKER_WAIT    confirm without waiting for the other markers
 *   -DBROKEN_ARRIVAL_ORDER     flush in arrival order, not forwarded messages first
 *   -DBROKEN_ACTIVE_BYPASS     while flushing, a message for an active K skips what is held
 *   -DBROKEN_NO_PARKING        route what a line ahead of this node sends by this node's owners
 */

#ifndef NMSG
#define NMSG 3
#endif
#ifndef SENDER
#define SENDER 2
#endif

#define OLD 0
#define NEW 1
#define SETTLED 0
#define AWAITING 1
#define FLUSHING 2
#define CAP (NMSG + 3)

mtype = { MSG, MARKER, CONFIRM };

chan line[9] = [CAP] of { mtype, byte, bool };   /* line[from * 3 + to]: kind, number, forwarded */
chan held[3] = [NMSG] of { byte, bool };         /* a node's held messages: number, forwarded */
chan parked[3] = [NMSG] of { byte, bool };       /* messages from a line that is ahead of this node */
bool markerFrom[9];                              /* markerFrom[from * 3 + to]: the marker came */

byte view[3];            /* 0: the old owners, 1: the new */
bool running[3];
byte phase[3];
byte markers[3];
byte confirms[3];
bool confirmed[3];
byte routing[3];         /* messages a flush took and has not routed yet */
byte handledUpTo = 0;
byte handledCount = 0;
byte sent = 0;

#ifdef BROKEN_NO_MARKER_WAIT
#define MARKERS_IN(node) true
#else
#define MARKERS_IN(node) (markers[node] == 2)
#endif
#ifdef LEAVE
/* OLD leaves: it tells the others first, and adopts the new owners once they have. */
#define ADOPT_NOW(node) (node != OLD || (view[1] == 1 && view[2] == 1))
#else
#define ADOPT_NOW(node) true
#endif
#define OWNER(node) (view[node] == 0 -> OLD : NEW)

inline activate(me) {
    assert(!running[(me + 1) % 3] && !running[(me + 2) % 3]);   /* one activation at a time */
    running[me] = true
}

inline handle(number) {
#ifdef NO_ORDER
    handledCount++                                            /* each once: counted at the end */
#else
    assert(number == handledUpTo + 1);                        /* in order, each once */
    handledUpTo = number
#endif
}

/* Past the handoff: activate if needed, then the activation handles it. */
inline deliver_now(me, number) {
    if
    :: !running[me] -> activate(me)
    :: else -> skip
    fi;
    handle(number)
}

inline deliver_here(me, number, forwarded) {
#ifdef BROKEN_NO_HOLD
    deliver_now(me, number)
#else
    if
#ifdef BROKEN_ACTIVE_BYPASS
    :: phase[me] != SETTLED && !running[me] -> held[me]!number, forwarded
#else
    :: phase[me] != SETTLED && (len(held[me]) > 0 || routing[me] > 0 || !running[me]) -> held[me]!number, forwarded
#endif
    :: else -> deliver_now(me, number)
    fi
#endif
}

/* Routes a message by this node's view: here, or to the owner; `onward`: it came from
 * another node (so sent on, it is marked forwarded); false for the sender's own. */
inline route(me, number, forwarded, onward) {
    if
    :: OWNER(me) == me -> deliver_here(me, number, forwarded)
    :: else -> line[me * 3 + OWNER(me)]!MSG, number, onward
    fi
}

inline receive(me, from) {
    line[from * 3 + me]?kind, number, forwarded;
    if
    :: kind == MSG ->
#ifndef BROKEN_NO_PARKING
        if
        :: view[me] == 0 && markerFrom[from * 3 + me] -> parked[me]!number, forwarded
        :: else -> route(me, number, forwarded, true)
        fi
#else
        route(me, number, forwarded, true)
#endif
    :: kind == MARKER -> markers[me]++; markerFrom[from * 3 + me] = true
    :: kind == CONFIRM ->
        confirms[me]++;
        if
        :: view[me] == 1 && phase[me] == AWAITING && confirms[me] == 2 -> phase[me] = FLUSHING
        :: else -> skip
        fi
    fi
}

proctype Node(byte me) {
    byte from, number, i, n, k;
    bool forwarded;
    mtype kind;
    byte takenNumber[NMSG];
    bool takenForwarded[NMSG];
    byte nextTaken = 0;

end:
    do
    /* Adopt the new owners: passivation may follow; the marker goes out on every line. */
    :: atomic {
        view[me] == 0 && ADOPT_NOW(me) ->
        view[me] = 1;
        phase[me] = (confirms[me] == 2 -> FLUSHING : AWAITING);
        line[me * 3 + (me + 1) % 3]!MARKER, 0, false;
        line[me * 3 + (me + 2) % 3]!MARKER, 0, false;
        /* What lines ahead of this node sent meanwhile, in the order it came. */
        do
        :: nempty(parked[me]) -> parked[me]?number, forwarded; route(me, number, forwarded, true)
        :: empty(parked[me]) -> break
        od
    }
    /* Passivate K where it no longer belongs (its mailbox is handled: handling is delivery). */
    :: atomic { view[me] == 1 && running[me] && me != NEW -> running[me] = false }
    /* Confirm: both markers here (unless broken), K stopped here, held messages sent on. */
    :: atomic {
        view[me] == 1 && !confirmed[me] && !(running[me] && me != NEW) && MARKERS_IN(me) ->
        if
        :: me != NEW ->
            do
            :: nempty(held[me]) -> held[me]?number, forwarded; line[me * 3 + NEW]!MSG, number, true
            :: empty(held[me]) -> break
            od
        :: else -> skip
        fi;
        line[me * 3 + (me + 1) % 3]!CONFIRM, 0, false;
        line[me * 3 + (me + 2) % 3]!CONFIRM, 0, false;
        confirmed[me] = true
    }
    /* Receive the next item of a line. */
    :: atomic { nempty(line[((me + 1) % 3) * 3 + me]) -> from = (me + 1) % 3; receive(me, from) }
    :: atomic { nempty(line[((me + 2) % 3) * 3 + me]) -> from = (me + 2) % 3; receive(me, from) }
    /* The flush: take what is held (forwarded first), route it one step at a time, settle. */
    :: atomic {
        phase[me] == FLUSHING && routing[me] == 0 && nempty(held[me]) ->
        n = len(held[me]);
        nextTaken = 0;
#ifdef BROKEN_ARRIVAL_ORDER
        i = 0;
        do
        :: i < n -> held[me]?takenNumber[i], takenForwarded[i]; i++
        :: else -> break
        od;
#else
        /* Forwarded first, each group in arrival order: rotate through the queue twice. */
        i = 0;
        k = 0;
        do
        :: i < n ->
            held[me]?number, forwarded;
            if
            :: forwarded -> takenNumber[k] = number; takenForwarded[k] = true; k++
            :: else -> held[me]!number, forwarded
            fi;
            i++
        :: else -> break
        od;
        do
        :: nempty(held[me]) -> held[me]?takenNumber[k], takenForwarded[k]; k++
        :: empty(held[me]) -> break
        od;
#endif
        routing[me] = n
    }
    :: atomic {
        routing[me] > 0 ->
        if
        :: OWNER(me) == me -> deliver_now(me, takenNumber[nextTaken])
        :: else -> line[me * 3 + OWNER(me)]!MSG, takenNumber[nextTaken], true
        fi;
        nextTaken++;
        routing[me]--
    }
    :: atomic { phase[me] == FLUSHING && routing[me] == 0 && empty(held[me]) -> phase[me] = SETTLED }
    /* The sender's next message. */
    :: atomic { me == SENDER && sent < NMSG -> sent++; route(me, sent, false, false) }
    od
}

/* When no step is left: everything handled, everyone settled. */
active proctype Final() {
    timeout ->
#ifdef NO_ORDER
    assert(handledCount == NMSG);
#else
    assert(handledUpTo == NMSG);
#endif
    assert(phase[0] == SETTLED && phase[1] == SETTLED && phase[2] == SETTLED)
}

init {
    atomic {
        running[OLD] = true;
#ifdef JOIN
        /* NEW joins with the new owners: it holds until the others confirm. */
        view[NEW] = 1;
        phase[NEW] = AWAITING;
        line[NEW * 3 + (NEW + 1) % 3]!MARKER, 0, false;
        line[NEW * 3 + (NEW + 2) % 3]!MARKER, 0, false;
#endif
        run Node(0);
        run Node(1);
        run Node(2)
    }
}
