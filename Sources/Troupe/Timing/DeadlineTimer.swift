internal import TroupeLocks
#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
internal import CTroupe

/// Something that happens at a deadline. Subclasses override ``fire()``, so scheduling one
/// allocates nothing beyond the entry itself (for asks, the entry is the ask's own state).
@usableFromInline
class TimerEntry: @unchecked Sendable {  // `deadline` and `heapIndex` are only touched under the owning timer's mutex
    var deadline: Int64 = 0
    var heapIndex: Int = -1

    /// Called on the timer thread once the deadline passed, outside the timer's lock.
    func fire() {}

    /// Whether the entry no longer needs to fire although it is still in the heap: a
    /// completed ask (asks are not cancelled one by one; ``DeadlineTimer`` purges them).
    var isDone: Bool { false }

    /// Called instead of `fire` for entries still pending when the timer stops, so that
    /// nothing waits for a deadline that will never be checked.
    func fireAtShutdown() { fire() }
}

/// One timer thread per system, holding a binary heap of deadlines.
///
/// Thread-safety: any thread schedules and cancels (both O(log n) under one mutex); the timer
/// thread pops due entries under the mutex and fires them after releasing it. The thread
/// sleeps on a futex until the earliest deadline, so an idle timer costs no CPU.
@usableFromInline
final class DeadlineTimer: @unchecked Sendable {  // `thread` is written once in init, read once in stop()
    private struct Heap {
        var entries: [TimerEntry] = []
        /// When the heap reaches this size, completed asks are purged from it (see `schedule`).
        var purgeThreshold = Heap.minimumPurgeThreshold
        static let minimumPurgeThreshold = 1024

        /// Drops every done entry and rebuilds the heap: O(n), once the heap doubled since the
        /// last purge, so O(1) per insertion, and the heap never holds more than about twice
        /// the live entries (plus a thousand).
        mutating func purgeDone() {
            entries.removeAll { entry in
                guard entry.isDone else { return false }
                entry.heapIndex = -1
                return true
            }
            for index in entries.indices { entries[index].heapIndex = index }
            for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
            purgeThreshold = max(Heap.minimumPurgeThreshold, 2 * entries.count)
        }

        mutating func insert(_ entry: TimerEntry) {
            entry.heapIndex = entries.count
            entries.append(entry)
            siftUp(entry.heapIndex)
        }

        mutating func remove(_ entry: TimerEntry) {
            let index = entry.heapIndex
            guard index >= 0, index < entries.count, entries[index] === entry else { return }
            let last = entries.removeLast()
            entry.heapIndex = -1
            guard index < entries.count else { return }
            entries[index] = last
            last.heapIndex = index
            siftDown(index)
            siftUp(index)
        }

        mutating func popDue(now: Int64, into due: inout [TimerEntry]) {
            while let first = entries.first, first.deadline <= now {
                remove(first)
                due.append(first)
            }
        }

        private mutating func siftUp(_ start: Int) {
            var child = start
            while child > 0 {
                let parent = (child - 1) / 2
                guard entries[child].deadline < entries[parent].deadline else { return }
                swapAt(child, parent)
                child = parent
            }
        }

        private mutating func siftDown(_ start: Int) {
            var parent = start
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < entries.count, entries[left].deadline < entries[smallest].deadline { smallest = left }
                if right < entries.count, entries[right].deadline < entries[smallest].deadline { smallest = right }
                guard smallest != parent else { return }
                swapAt(parent, smallest)
                parent = smallest
            }
        }

        private mutating func swapAt(_ a: Int, _ b: Int) {
            entries.swapAt(a, b)
            entries[a].heapIndex = a
            entries[b].heapIndex = b
        }
    }

    private let heap = Locked(Heap())
    private let wakeup = EventCount()
    private let running = Atomic<Bool>(true)
    /// The deadline the timer thread sleeps until; Int64.max while it is awake or has nothing
    /// to wait for. A new entry wakes the thread only when it is due earlier, so a stream of
    /// asks with similar timeouts costs no wake-ups.
    private let sleepingUntil = Atomic<Int64>(Int64.max)
    private var thread: pthread_t?
    /// Whether the timer runs on virtual time (a ``ManualDriver``'s system).
    private let isVirtual: Bool
    /// Virtual time, in nanoseconds since the timer was made (unused on the real clock). Moved
    /// forward only by ``advanceVirtualTime(to:)``.
    private let virtualNow = Atomic<Int64>(0)

    init(name: String) {
        isVirtual = false
        thread = Threads.start(name: "\(name)-timer") { [self] in run() }
    }

    /// A timer on virtual time: no thread; due entries fire when ``advanceVirtualTime(to:)``
    /// reaches them, on the thread that calls it.
    init(virtualTimeNamed name: String) {
        isVirtual = true
        thread = nil
    }

    /// The clock deadlines are measured on: the monotonic clock, or virtual time. Any thread.
    @usableFromInline
    var now: Int64 { isVirtual ? virtualNow.load(ordering: .acquiring) : CTroupe_monotonic_ns() }

    /// Virtual time only: fires every entry due by `target`, earliest first (entries with one
    /// deadline in the order they were scheduled), each with the clock set to its deadline,
    /// then sets the clock to `target`. Entries that firing schedules are fired too when due.
    /// Returns how many fired. One caller at a time (the driver's thread).
    func advanceVirtualTime(to target: Int64) -> Int {
        requireValidUse(isVirtual, "advanceVirtualTime on a timer of the real clock")
        var fired = 0
        while true {
            let next: TimerEntry? = heap.withLock { heap in
                guard let first = heap.entries.first, first.deadline <= target else { return nil }
                heap.remove(first)
                return first
            }
            guard let next else { break }
            virtualNow.store(max(virtualNow.load(ordering: .relaxed), next.deadline), ordering: .releasing)
            next.fire()
            fired += 1
        }
        virtualNow.store(max(virtualNow.load(ordering: .relaxed), target), ordering: .releasing)
        return fired
    }

    /// The earliest pending deadline that still needs to fire, if any (virtual time).
    var nextDeadline: Int64? {
        heap.withLock { heap in heap.entries.filter { !$0.isDone }.map(\.deadline).min() }
    }

    /// Number of pending entries.
    var count: Int { heap.withLock { $0.entries.count } }

    /// Fires `entry` once `delay` has passed, unless cancelled first. Any thread.
    @usableFromInline
    func schedule(_ entry: TimerEntry, after delay: Duration) {
        schedule(entry, atNanoseconds: MonotonicDeadline.after(delay.nanoseconds, from: now))
    }

    /// Fires `entry` at `deadline` (``CTroupe_monotonic_ns`` time). Any thread, including the
    /// timer thread inside `fire` (periodic timers reschedule themselves there).
    /// Arms an ask's time limit (no `Duration` math: the limit is in nanoseconds). Any thread.
    @usableFromInline
    func armTimeout(of ask: AskStateBase) {
        schedule(ask, atNanoseconds: MonotonicDeadline.after(ask.timeoutNanoseconds, from: now))
    }

    /// Schedules `entry`. Entries that complete otherwise without being cancelled (asks) stay
    /// in the heap, done, until they are due (then `fire` finds them completed) or until the
    /// heap has doubled, when an insertion purges every done entry: a lock and a heap removal
    /// less per answered ask, at a bounded cost in memory (a completed ask has dropped its
    /// callback and continuation).
    func schedule(_ entry: TimerEntry, atNanoseconds deadline: Int64) {
        heap.withLock { heap in
            entry.deadline = deadline
            heap.insert(entry)
            if heap.entries.count >= heap.purgeThreshold { heap.purgeDone() }
        }
        if deadline < sleepingUntil.load(ordering: .sequentiallyConsistent) { wakeup.notify() }
    }

    /// Removes `entry` if it has not fired yet. Any thread.
    func cancel(_ entry: TimerEntry) {
        heap.withLock { $0.remove(entry) }
    }

    /// Stops the timer thread, then calls `fireAtShutdown` on every pending entry (on the
    /// calling thread). Call once. Entries scheduled afterwards never fire.
    func stop() {
        running.store(false, ordering: .sequentiallyConsistent)
        wakeup.notify(all: true)
        if let thread { Threads.join(thread) }
        thread = nil
        let pending = heap.withLock { heap in
            let entries = heap.entries
            for entry in entries { entry.heapIndex = -1 }
            heap.entries.removeAll()
            return entries
        }
        for entry in pending { entry.fireAtShutdown() }
    }

    private func run() {
        // Deadlines are the point of this thread: do not let the kernel stretch its sleeps by
        // the default 50 µs of timer slack (measured: lateness p50 ~70 µs → ~25 µs).
        let slack = CTroupe_set_current_thread_timer_slack(1)
        if !(slack == 0) { fatalError("prctl(PR_SET_TIMERSLACK) failed with error \(slack)") }
        var due: [TimerEntry] = []
        while running.load(ordering: .sequentiallyConsistent) {
            let epoch = wakeup.prepareWait()
            let now = CTroupe_monotonic_ns()
            let next: Int64? = heap.withLock { heap in
                heap.popDue(now: now, into: &due)
                return heap.entries.first?.deadline
            }
            if !due.isEmpty || !running.load(ordering: .sequentiallyConsistent) {
                wakeup.cancelWait()
                for entry in due { entry.fire() }
                due.removeAll(keepingCapacity: true)
                continue
            }
            sleepingUntil.store(next ?? Int64.max, ordering: .sequentiallyConsistent)
            // An entry inserted after the heap check either read Int64.max (and notified, which
            // moves the epoch taken before the check, so this wait returns at once) or read
            // `next` and notified if it is due earlier.
            wakeup.wait(epoch: epoch, timeoutNanoseconds: next.map { max(0, $0 - now) } ?? -1)
            sleepingUntil.store(Int64.max, ordering: .sequentiallyConsistent)
        }
    }
}
