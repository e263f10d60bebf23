/*
 * The scheduling right of an actor's mailbox (Sources/CTroupe/mailbox.c), for the spin model
 * checker. Run by scripts/model-check.sh; the Architecture article ("Model-checked protocols")
 * says what is checked and what is not.
 *
 * Modelled, step for step: CTroupe_mailbox_push, CTroupe_mailbox_pop_batch (unbounded
 * mailboxes), CTroupe_mailbox_finish_turn, CTroupe_mailbox_try_acquire, and the liburcu 0.13.2
 * wait-free queue under them (urcu/static/wfcqueue.h: ___cds_wfcq_append,
 * ___cds_wfcq_dequeue_with_state nonblocking, _cds_wfcq_empty), including the window in which
 * an enqueuer has exchanged the tail but not yet linked its node (a dequeue then returns
 * CDS_WFCQ_WOULDBLOCK). Around it, the callers: AnyCell.push (push, schedule when the right
 * was won), ActorCell.turn (pop batches up to a limit, then finishTurn), Worker.runCell (run
 * another turn or queue the cell again while finishTurn keeps the right), HandOff (the pusher
 * runs one turn in place), ActorSystem's spawn (try_acquire).
 *
 * Memory model: every shared access is one atomic Promela step, so spin explores the
 * sequentially consistent interleavings only. The C relies on two orderings that SC gives for
 * free and that the C provides with barriers: the enqueue's xchg on the tail is a full barrier
 * (liburcu's uatomic_xchg: a locked xchg on x86, __sync builtins elsewhere), so push's later
 * load of `scheduled` cannot pass it; and finish_turn's seq_cst fence keeps the re-check's
 * loads of the queue after the store that releases the right (without it a store buffer lets
 * the loads go first: BROKEN_NO_FENCE models exactly that reordering). Acquire/release pairs
 * that only publish node contents are not modelled (messages carry no data here).
 *
 * Not modelled: drop-oldest mailboxes (pop_lock, the held list, CTroupe_mailbox_drop_oldest),
 * depth counting and bounded mailboxes (relaxed counters, not part of the right), envelope
 * reuse after a pop, suspension (a suspended actor keeps the right for its restart timer).
 *
 * Properties:
 * - no double scheduling: at most one holder of the right, at most one thread running turns
 *   (assertions at every acquisition and every pop);
 * - every message consumed exactly once, in per-producer FIFO order (assertions at each pop);
 * - no stranded mailbox: when nothing can move any more, every message has been consumed, the
 *   queue is empty and nobody holds the right (the Quiescent process, on `timeout`);
 * - progress (`ltl drained`, checked with weak fairness): every run eventually consumes every
 *   message, including runs in which a consumer meets an enqueuer's unlinked node.
 *
 * Deliberately broken variants (each must make spin report an error):
 *   -DBROKEN_NO_RECHECK  finish_turn releases the right and returns without looking again
 *   -DBROKEN_NO_FENCE    finish_turn's re-check loads happen before the releasing store
 *   -DBROKEN_NO_CAS      push takes the right with a load and a plain store instead of a CAS
 * With -DNO_QUIESCENT the end-state assertion is left out, so that a broken variant shows the
 * LTL claim failing on its own (an acceptance cycle).
 */

#ifndef NPROD
#define NPROD 2         /* producers (threads that send to the actor) */
#endif
#ifndef NPUSH
#define NPUSH 2         /* messages per producer */
#endif
#ifndef NWORKER
#define NWORKER 1       /* workers popping the run queue; more only relabel who runs a turn */
#endif
#ifndef LIMIT
#define LIMIT 2         /* a worker's turn handles at most LIMIT messages (batchSize) */
#endif
#ifndef SPAWN
#define SPAWN 1         /* 1: a spawner takes the right concurrently (try_acquire) */
#endif

#define NMSG (NPROD * NPUSH)
#define HEAD 0            /* &head->node: the queue's dummy node; messages are nodes 1..NMSG */
#define NIL 255           /* NULL */
#define WOULDBLOCK 254    /* CDS_WFCQ_WOULDBLOCK */

/* The mailbox (struct CTroupe_mailbox). */
byte next[NMSG + 1];      /* cds_wfcq_node.next of every node; next[HEAD] is head->node.next */
byte tail = HEAD;         /* tail->p */
bit scheduled;            /* mailbox->scheduled */

/* The run queues, abstracted to one channel: an entry carries the right to whoever pops it.
 * Room for two, so that a double scheduling shows up as an assertion, not as a blocked send. */
chan runq = [2] of { bit };

/* Ghost state (not in the C): who holds the right, who runs, what was consumed. */
byte holders;             /* holders of the right, counting an entry on the run queue */
byte running;             /* threads running the actor's turns with the right */
bit consumed[NMSG + 1];
byte nconsumed;

/* Takes the right in the same atomic step as the successful CAS that wins it. */
#define ACQUIRED holders++; running++; assert(holders == 1 && running == 1)

/* _cds_wfcq_empty: two plain loads, head->node.next first, then tail->p. */
inline wfcq_empty(result) {
    if
    :: next[HEAD] != NIL -> result = 0
    :: else ->
        if
        :: tail == HEAD -> result = 1
        :: else -> result = 0
        fi
    fi
}

/* ___cds_wfcq_dequeue_with_state(head, tail, &state, blocking = 0). Consumer only: callers hold
 * the right, which gives cds_wfcq its dequeue-side mutual exclusion. */
inline wfcq_dequeue(node, last) {
    last = 0;
    wfcq_empty(vacant);
    if
    :: vacant -> node = NIL
    :: else ->
        node = next[HEAD];                      /* ___cds_wfcq_node_sync_next(&head->node, 0) */
        if
        :: node == NIL -> node = WOULDBLOCK     /* an enqueuer has not linked its node yet */
        :: else ->
            nxt = next[node];
            if
            :: nxt == NIL ->
                /* probably the only node: make the queue empty again */
                next[HEAD] = NIL;               /* _cds_wfcq_node_init(&head->node) */
                atomic {                        /* uatomic_cmpxchg(&tail->p, node, &head->node) */
                    if
                    :: tail == node -> tail = HEAD; last = 1    /* CDS_WFCQ_STATE_LAST */
                    :: else
                    fi
                }
                if
                :: last
                :: else ->
                    nxt = next[node];           /* a concurrent enqueue: sync_next(node, 0) */
                    if
                    :: nxt == NIL -> next[HEAD] = node; node = WOULDBLOCK   /* put it back */
                    :: else -> next[HEAD] = nxt
                    fi
                fi
            :: else -> next[HEAD] = nxt         /* move the head forward */
            fi
        fi
    fi
}

/* What the turn does with a popped envelope (ActorCell.handle), plus the checks. */
inline consume(node) {
    d_step {
        assert(running == 1 && holders == 1);   /* only the holder of the right pops */
        assert(!consumed[node]);                /* exactly once */
        assert((node - 1) % NPUSH == 0 || consumed[node - 1]);  /* FIFO per producer */
        consumed[node] = 1;
        nconsumed++
    }
}

/* CTroupe_mailbox_pop_batch (mailbox.c), not drop-oldest: dequeue until `capacity`, an empty
 * queue, WOULDBLOCK, or the node the dequeue reported as the last. */
inline pop_batch(capacity, count) {
    count = 0;
    do
    :: count < capacity ->
        wfcq_dequeue(node, last);
        if
        :: node == NIL || node == WOULDBLOCK -> break
        :: else ->
            consume(node);
            count++;
            if
            :: last -> break
            :: else
            fi
        fi
    :: else -> break
    od
}

/* CTroupe_mailbox_finish_turn (mailbox.c). keep = 1: the caller still holds the right. */
inline finish_turn(keep) {
    wfcq_empty(vacant);                          /* content_is_empty: not drop-oldest */
    if
    :: !vacant -> keep = 1                       /* more came: keep the right */
    :: else ->
#ifdef BROKEN_NO_FENCE
        /* Without the fence a store buffer lets the re-check's loads pass the store. */
        wfcq_empty(vacant);
        atomic { scheduled = 0; holders--; running-- }
#else
        /* atomic_store(scheduled, 0, release); atomic_thread_fence(seq_cst): in the SC model
         * the store is visible to everyone before the re-check's loads. */
        atomic { scheduled = 0; holders--; running-- }
        wfcq_empty(vacant);
#endif
        if
        :: vacant -> keep = 0
        :: else ->
#ifdef BROKEN_NO_RECHECK
            keep = 0
#else
            /* a push landed meanwhile: it or we take the right, exactly once */
            atomic {
                if
                :: scheduled == 0 -> scheduled = 1; keep = 1; ACQUIRED
                :: else -> keep = 0
                fi
            }
#endif
        fi
    fi
}

/* ActorCell.turn: pop batches until `limit` or a short batch, then finishTurn. */
inline turn(limit, keep) {
    handled = 0;
    do
    :: handled < limit ->
        pop_batch(limit - handled, count);
        if
        :: count == 0 -> break
        :: else ->
            requested = limit - handled;
            handled = handled + count;
            if
            :: count < requested -> break
            :: else
            fi
        fi
    :: else -> break
    od;
    atomic { node = 0; nxt = 0; count = 0; handled = 0; requested = 0; last = 0 }  /* dead */
    finish_turn(keep);
    vacant = 0
}

/* AnyCell.push -> CTroupe_mailbox_push (mailbox.c) for message node `n`. won = 1: this
 * producer won the right and must schedule the actor exactly once. */
inline push(n, won) {
    won = 0;
    /* envelope->link = NULL: next[n] is NIL from init (nodes are not reused in the model) */
    atomic { old = tail; tail = n }             /* uatomic_xchg(&tail->p, node): full barrier */
    /* CMM_STORE_SHARED(old_tail->next, node); enqueue returns old_tail != &head->node */
    d_step { next[old] = n; wasempty = (old == HEAD); old = 0 }
    if
    :: !wasempty                                /* the queue was not empty: return false */
    :: else ->
        if
        :: scheduled != 0                       /* relaxed load: scheduled or running */
        :: else ->
#ifdef BROKEN_NO_CAS
            atomic { scheduled = 1; won = 1; ACQUIRED }
#else
            atomic {                            /* compare_exchange_strong(scheduled, 0, 1) */
                if
                :: scheduled == 0 -> scheduled = 1; won = 1; ACQUIRED
                :: else
                fi
            }
#endif
        fi
    fi
}

proctype Producer(byte p) {
    byte k, n, old, node, nxt, count, handled, requested;
    bit won, wasempty, last, vacant, keep;
    for (k : 0 .. NPUSH - 1) {
        n = 1 + p * NPUSH + k;
        push(n, won);
        if
        :: won ->
            /* system.schedule: onto a run queue (or a worker's next-slot: the same hand-over) */
            if
            :: atomic { running--; runq!0 }
            :: /* HandOff: an ask from a worker runs one turn in place (limit 1) */
                turn(1, keep);
                if
                :: keep -> atomic { running--; runq!0 }
                :: else
                fi
            fi
        :: else
        fi
    }
}

/* ActorSystem spawn: `if CTroupe_mailbox_try_acquire(mailbox) { schedule(cell) }`. */
proctype Spawner() {
    bit won;
    atomic {
        if
        :: scheduled == 0 -> scheduled = 1; won = 1; ACQUIRED
        :: else
        fi
    }
    if
    :: won -> atomic { running--; runq!0 }
    :: else
    fi
}

/* A worker: pops the cell from a run queue (taking the right) and runs its turns. */
proctype Worker() {
    byte node, nxt, count, handled, requested;
    bit last, vacant, keep;
end:
    do
    :: atomic { runq?_ -> running++; assert(holders == 1 && running == 1) }
        /* Worker.runCell: more turns while finishTurn keeps the right. Queueing the cell again
         * instead (Worker.queue) hands the right to whichever worker pops it next: with the
         * workers doing nothing else, that is the same as running on here. */
        do
        :: turn(LIMIT, keep);
            if
            :: keep
            :: else -> break
            fi
        od
    od
}

/* No stranded mailbox: once nothing can move (producers done, workers idle on an empty run
 * queue), everything pushed was consumed and nobody holds the right. */
proctype Quiescent() {
    timeout ->
        assert(nconsumed == NMSG && tail == HEAD && next[HEAD] == NIL && scheduled == 0
               && holders == 0 && running == 0 && len(runq) == 0)
}

ltl drained { <> (nconsumed == NMSG) }

init {
    byte i;
    atomic {
        for (i : 0 .. NMSG) { next[i] = NIL }
        for (i : 1 .. NWORKER) { run Worker() }
        for (i : 0 .. NPROD - 1) { run Producer(i) }
        if
        :: SPAWN -> run Spawner()
        :: else
        fi;
#ifndef NO_QUIESCENT
        run Quiescent()         /* left out to show that `ltl drained` alone catches a stranding */
#endif
    }
}
