#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Abandons store calls that outlive their deadline, for every journal in the process, from one
/// thread of its own.
///
/// A journal awaits its store inline (no task or thread hop per commit) and registers each call
/// here first; whichever comes first decides the outcome, under this watchdog's lock: the call
/// returning (``finish(_:)`` answers true, and its caller delivers the result), or the deadline
/// passing (the watchdog removes the call and runs its `abandon`, which fails the batch and lets
/// the journal go on; ``finish(_:)`` then answers false and the caller drops what came back).
///
/// It costs a commit two short critical sections and a clock read: the thread sleeps until the
/// earliest deadline and is signalled only when a call's deadline comes before the time it
/// means to wake (after an idle spell, or for a journal with a shorter timeout), so under a
/// steady load it wakes about once per timeout. Not a task: a `DeterministicSystem`'s schedule
/// stays the same with or without a timeout, as long as no call times out.
final class StoreCallWatchdog: @unchecked Sendable {  // its vars are only touched with `mutex` held
    /// The one watchdog the journals share.
    static let shared = StoreCallWatchdog()

    /// A call in flight.
    private struct Watched {
        let ticket: UInt64
        let deadline: UInt64
        let abandon: @Sendable () -> Void
    }

    private var calls: [Watched] = []
    private var nextTicket: UInt64 = 1
    /// When the thread will next look (monotonic nanoseconds); nil while it waits for a signal.
    private var wakeAt: UInt64?
    private var started = false
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    private init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        // Safety: both freshly allocated and initialised once; the shared watchdog lives as long
        // as the process, so they are never destroyed.
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Deadlines are on the monotonic clock: a wall-clock step must not fire or delay them.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        precondition(pthread_cond_init(condition, &attributes) == 0, "pthread_cond_init failed")
        pthread_condattr_destroy(&attributes)
    }

    /// Watches a call that must finish within `timeout`, and returns its ticket for
    /// ``finish(_:)``. `abandon` runs on the watchdog's thread if the deadline passes first:
    /// keep it short (fail completions, start a task).
    func watch(for timeout: Duration, abandon: @escaping @Sendable () -> Void) -> UInt64 {
        let (seconds, attoseconds) = timeout.components
        let span = UInt64(clamping: seconds) &* 1_000_000_000 &+ UInt64(clamping: attoseconds / 1_000_000_000)
        let deadline = Self.now() &+ span
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let ticket = nextTicket
        nextTicket += 1
        calls.append(Watched(ticket: ticket, deadline: deadline, abandon: abandon))
        if !started {
            started = true
            startThread()
        } else if wakeAt.map({ deadline < $0 }) ?? true {
            pthread_cond_signal(condition)
        }
        return ticket
    }

    /// Ends the watch on `ticket`: true if the call finished in time (its caller delivers the
    /// outcome), false if it was abandoned (its batch has already failed; drop the outcome).
    func finish(_ ticket: UInt64) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard let index = calls.firstIndex(where: { $0.ticket == ticket }) else { return false }
        calls.swapAt(index, calls.count - 1)
        calls.removeLast()
        return true
    }

    private func startThread() {
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { _ in
                StoreCallWatchdog.shared.run()
                return nil
            }, nil)
        precondition(result == 0, "pthread_create failed for the store call watchdog: \(result)")
        pthread_detach(thread)
    }

    private func run() {
        pthread_mutex_lock(mutex)
        while true {
            let now = Self.now()
            var expired: [@Sendable () -> Void] = []
            var earliest: UInt64?
            calls.removeAll { call in
                if call.deadline <= now {
                    expired.append(call.abandon)
                    return true
                }
                earliest = min(earliest ?? call.deadline, call.deadline)
                return false
            }
            if !expired.isEmpty {
                // Outside the lock: an abandon may start another call and watch it.
                pthread_mutex_unlock(mutex)
                for abandon in expired { abandon() }
                pthread_mutex_lock(mutex)
                continue
            }
            wakeAt = earliest
            if let earliest {
                var until = timespec(
                    tv_sec: Int(earliest / 1_000_000_000), tv_nsec: Int(earliest % 1_000_000_000))
                _ = pthread_cond_timedwait(condition, mutex, &until)
            } else {
                _ = pthread_cond_wait(condition, mutex)
            }
        }
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
