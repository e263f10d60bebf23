/*
 * The event count that parks idle workers (Sources/CTroupe/parking.c), for the spin model
 * checker, with the way Worker.run parks and Scheduler.notifyIdle wakes around it. Run by
 * scripts/model-check.sh; the Architecture article ("Model-checked protocols") says what is
 * checked and what is not.
 *
 * Modelled, step for step: CTroupe_eventcount_prepare_wait, _cancel_wait, _wait (the acquire
 * load of the epoch, then FUTEX_WAIT, then leave) and _notify (fence, load, the compare-exchange
 * loop, FUTEX_WAKE), on the state word's three fields (epoch, sleepers, pending), which change
 * together in one atomic step as in the C's single 64-bit word. The futex is a wait queue:
 * FUTEX_WAIT compares the epoch and queues the caller in one step (the kernel does both under
 * its hash-bucket lock) and blocks until a FUTEX_WAKE takes it off; FUTEX_WAKE takes one queued
 * thread (any of them) or all. No spurious wake-ups and no timeouts: those only make a sleeper
 * look again sooner, so leaving them out is the hard case.
 *
 * Around it (POLLING=1, the default), the shared workers of Scheduler/Worker.swift: a worker
 * takes a cell if any (all run queues and slots as one pool: a worker pops or steals any),
 * else polls announced in `spinning` (setPolling), then prepare_wait, re-check (hasWork),
 * cancel_wait or wait; a worker that found work by polling or after a wake-up passes one
 * wake-up on when cells remain once it has taken one (`polled`). A sender pushes a cell, then
 * Scheduler.notifyIdle: fence, and notify() only when no worker polls. With POLLING=0 the
 * event count is used bare (LateRunner, ThreadParker, the system's stop latch): no polling, no
 * passing on, and a notifier wakes one or all (both explored).
 * A cell's handler may block its worker for good (STUCK=1): then the other worker must still
 * get every remaining cell; this is what makes the pass-on necessary.
 *
 * Memory model: every shared access is one atomic Promela step, so spin explores the
 * sequentially consistent interleavings only. On x86-64 that is faithful here: every access
 * the argument needs is a locked instruction or follows a fence (prepare_wait's fetch_add,
 * leave's and notify's compare-exchange, notify's leading fence, the `spinning` counter's
 * read-modify-writes, notifyIdle's fence, the run-queue push's xchg), and a locked instruction
 * is a full barrier. Under the C11 model (and on AArch64) a seq_cst read-modify-write does
 * not order the plain loads that follow it, such as the re-check's looks at the run queues
 * after prepare_wait: there this model may be optimistic. leave's and notify's
 * load-compute-CAS loops are modelled as a load followed by a CAS that fails (and reloads)
 * when the word changed; leave's loop, whose decision cannot go stale, is one atomic step.
 * Not modelled: the epoch's 32-bit wrap-around (an ABA needing 2^32 notifies while one
 * sleeper holds an old epoch), timeouts (Worker's strand backstop), the next-slot wake-up
 * (notifyIdleForSlot, slotWakePending, watching), the run queues' try-lock pop.
 *
 * Properties:
 * - no lost wake-up: when nothing can move any more, either no cell is left or no worker is
 *   asleep in the kernel (the Quiescent process, on `timeout`);
 * - the invariant of parking.c's proof, in every reachable state:
 *   pending <= |E| + min(W, |Q|), with E the counted sleepers that will leave without another
 *   FUTEX_WAKE, Q those asleep in the kernel, W the wakes whose FUTEX_WAKE has not run yet;
 *   and pending <= sleepers (the ProofInvariant process). parking.c states the bound for wakes
 *   of one; for a wake of all (pending jumps to sleepers, W grows by one) it does not hold as
 *   written (two sleepers in the kernel, a notify(all) between its CAS and its FUTEX_WAKE:
 *   pending 2, E 0, min(W, |Q|) 1), so the model counts a wake of all in flight as |Q| wakes,
 *   which is what it delivers.
 *
 * Deliberately broken variants (each must make spin report an error):
 *   -DBROKEN_NO_RECHECK          the worker waits right after prepare_wait, without re-checking
 *   -DBROKEN_SKIP_WHEN_PENDING   notify skips whenever a wake is pending (instead of: when
 *                                every sleeper has one)
 *   -DBROKEN_NO_PASS_ON          a worker that polled or was woken never passes a wake-up on
 *   -DBROKEN_LEAVE_KEEPS_PENDING leave drops the sleeper but not a pending wake (trips the proof's
 *                                invariant)
 * BROKEN_SKIP_WHEN_PENDING is run with POLLING=0: with polling, the pass-on chain makes up for
 * it (spin finds no lost wake-up then).
 */

#ifndef NSLEEPER
#define NSLEEPER 2      /* workers that park (at most 3) */
#endif
#ifndef NNOTIFIER
#define NNOTIFIER 2     /* threads that publish cells and notify */
#endif
#ifndef NPUBLISH
#define NPUBLISH 1      /* cells each notifier publishes */
#endif
#ifndef POLLING
#define POLLING 1       /* 1: Worker.run's polling and pass-on; 0: the bare event count */
#endif
#ifndef STUCK
#define STUCK 1         /* 1: a handler may block its worker for good */
#endif

/* CTroupe_eventcount.state: bits 0-31, 32-47, 48-63 of one word. */
byte epoch;               /* the futex word */
byte sleepers;
byte pending;
bit inkernel[3];          /* the futex's wait queue */

/* The scheduler. */
byte work;                /* cells on run queues, not yet taken */
byte spinning;            /* Scheduler.spinning: shared workers polling */

/* Ghost state (not in the C): the proof's sets. */
byte phase[3];            /* 0 not counted; 1 counted, will still compare its epoch;
                             2 asleep in the kernel (Q); 3 counted, leaving without a wait (E) */
byte held[3];             /* the epoch prepare_wait returned */
byte inflight;            /* W: wakes of one that moved the epoch, FUTEX_WAKE not yet run */
byte inflightall;         /* the same for wakes of all */

#define INE(i) (phase[i] == 3 || (phase[i] == 1 && held[i] != epoch))
#define NE (INE(0) + INE(1) + INE(2))
#define NQ (inkernel[0] + inkernel[1] + inkernel[2])
#define NCOUNTED ((phase[0] != 0) + (phase[1] != 0) + (phase[2] != 0))
#define MIN(a, b) ((a) < (b) -> (a) : (b))
/* parking.c states the bound for wakes of one; a wake of all in flight will wake every thread
 * in the kernel, so it counts as |Q| of them (see the note at the top). */
#define NW (inflightall > 0 -> NQ : MIN(inflight, NQ))
#define PROOF (pending <= NE + NW && pending <= sleepers && sleepers == NCOUNTED)

/* leave (parking.c): sleepers -= 1, and pending -= 1 when pending > 0. Its load + CAS loop
 * recomputes from the value the CAS saw, so it acts as one atomic read-modify-write. */
inline leave() {
    atomic {
        sleepers--;
#ifndef BROKEN_LEAVE_KEEPS_PENDING
        if
        :: pending > 0 -> pending--
        :: else
        fi;
#endif
        phase[me] = 0;
        e = 0                                           /* dead from here: not part of the state */
    }
}

/* FUTEX_WAKE_PRIVATE: one queued thread (any) or all. */
inline futex_wake(all) {
    atomic {
        if
        :: all -> inflightall--
        :: else -> inflight--
        fi;
        if
        :: all ->
            for (i : 0 .. 2) {
                if
                :: inkernel[i] -> inkernel[i] = 0; phase[i] = 3
                :: else
                fi
            }
        :: else ->
            if
            :: inkernel[0] -> inkernel[0] = 0; phase[0] = 3
            :: inkernel[1] -> inkernel[1] = 0; phase[1] = 3
            :: inkernel[2] -> inkernel[2] = 0; phase[2] = 3
            :: else
            fi
        fi
    }
}

/* CTroupe_eventcount_notify (parking.c). */
inline notify(all) {
    /* atomic_thread_fence(seq_cst): implicit in the SC model */
    atomic { se = epoch; ss = sleepers; sp = pending }  /* relaxed load of the state */
    woke = 0;
    do
#ifdef BROKEN_SKIP_WHEN_PENDING
    :: ss == 0 || (!all && sp > 0) -> break
#else
    :: ss == 0 || (!all && ss <= sp) -> break           /* every sleeper has a wake coming */
#endif
    :: else ->
        atomic {                                        /* compare_exchange_weak */
            if
            :: epoch == se && sleepers == ss && pending == sp ->
                epoch = se + 1;
                pending = (all -> ss : sp + 1);
                woke = 1;
                if
                :: all -> inflightall++
                :: else -> inflight++
                fi
            :: else -> se = epoch; ss = sleepers; sp = pending
            fi
        }
        if
        :: woke -> break
        :: else
        fi
    od;
    if
    :: woke -> futex_wake(all)                          /* syscall(FUTEX_WAKE_PRIVATE) */
    :: else
    fi;
    d_step { se = 0; ss = 0; sp = 0; woke = 0; i = 0 }
}

/* A shared worker's loop (Worker.run), or with POLLING=0 any thread that parks on the event
 * count (take work, else prepare, re-check, cancel or wait). */
proctype Sleeper(byte me) {
    byte e, se, ss, sp, i;
    bit polled, found, woke;
loop:
    /* nextCell(): a cell from the slot or a run queue (a pop or a steal) */
    atomic {
        if
        :: work > 0 -> work--; found = 1
        :: else -> found = 0
        fi
    }
    if
    :: found ->
        if
        :: polled ->
            polled = 0;
#ifndef BROKEN_NO_PASS_ON
            /* if !allQueuesEmpty() { wakeup.notify() } */
            if
            :: work > 0 -> notify(0)
            :: else
            fi
#endif
        :: else
        fi;
        /* runCell: the handler may block this worker for good */
        if
        :: STUCK -> goto stuck
        :: true
        fi;
        goto loop
    :: else
    fi;
#if POLLING
    /* spinForWork(): setPolling(true), look (hasWork), setPolling(false) (its defer). One look
     * stands for the poll loop: only the window in which `spinning` counts it matters. */
    spinning++;
    if
    :: work > 0 -> found = 1
    :: else -> found = 0
    fi;
    spinning--;
    if
    :: found -> polled = 1; goto loop                   /* case .work: polled = isShared */
    :: else
    fi;
#endif
    atomic { sleepers++; e = epoch; phase[me] = 1; held[me] = e }  /* prepare_wait: fetch_add */
#ifndef BROKEN_NO_RECHECK
    /* if hasWork() { cancelWait(); polled = isShared; continue } */
    atomic {
        if
        :: work > 0 -> found = 1; phase[me] = 3
        :: else -> found = 0
        fi
    }
    if
    :: found -> leave(); polled = POLLING; goto loop
    :: else
    fi;
#endif
    /* CTroupe_eventcount_wait(epoch, -1) */
    if
    :: epoch == e ->                                    /* acquire load of the state */
        atomic {                                        /* FUTEX_WAIT_PRIVATE(epoch) */
            if
            :: epoch == e -> inkernel[me] = 1; phase[me] = 2
            :: else -> phase[me] = 3                    /* EAGAIN */
            fi
        }
end_asleep:
        (inkernel[me] == 0)                             /* until a FUTEX_WAKE dequeues it */
    :: else -> phase[me] = 3
    fi;
    leave();
    polled = POLLING;                                   /* the wake-up may stand for several */
    goto loop;
stuck:
    skip
}

/* A thread outside the workers that schedules cells: Worker.queue, then Scheduler.notifyIdle
 * (POLLING=1); or publishes anything and notifies one or all (POLLING=0). */
proctype Notifier() {
    byte k, se, ss, sp, i;
    bit woke, all;
    for (k : 1 .. NPUBLISH) {
        work++;                                         /* CTroupe_runqueue_push: xchg */
#if POLLING
        /* notifyIdle: fence; if spinning == 0 { idle.notify() } */
        if
        :: spinning == 0 -> notify(0)
        :: else
        fi
#else
        if
        :: all = 0
        :: all = 1
        fi;
        notify(all)
#endif
    }
}

/* No lost wake-up: once nothing can move, no cell waits while a worker sleeps. */
proctype Quiescent() {
    timeout -> assert(work == 0 || NQ == 0)
}

/* parking.c's proof invariant, checked in every reachable state. */
proctype ProofInvariant() {
end:
    atomic { !PROOF -> assert(PROOF) }
}

init {
    byte i;
    atomic {
        for (i : 0 .. NSLEEPER - 1) { run Sleeper(i) }
        for (i : 1 .. NNOTIFIER) { run Notifier() }
        run Quiescent();
        run ProofInvariant()
    }
}
