#if canImport(Glibc)
    import Glibc
#endif
import CTroupe
import Synchronization
import Testing
import TroupeTestSupport

@testable import Troupe

/// `EventCount`, the parking primitive of workers, the timer thread, blocking asks and
/// shutdown. A sleeper takes an epoch (`prepareWait`), looks for work, then `wait`s for that
/// epoch; a waker publishes work, then `notify`s. A notify after `prepareWait` returned is never
/// lost: `wait` returns at once. The waits here are long (10 s); the tests expect them to end
/// long before that.
@Suite struct EventCountTests {
    @Test func aNotifyBetweenPrepareWaitAndWaitMakesWaitReturnAtOnce() {
        let events = EventCount()
        let epoch = events.prepareWait()
        events.notify()
        let started = ContinuousClock.now
        events.wait(epoch: epoch, timeoutNanoseconds: 10_000_000_000)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(CTroupe_eventcount_sleepers(events.raw) == 0, "wait ends the wait")
    }

    @Test func aNotifyFromAnotherThreadBetweenPrepareWaitAndWaitIsNotLost() async {
        let events = EventCount()
        let epoch = events.prepareWait()
        await TestThreads.run(count: 1) { _ in events.notify() }
        let started = ContinuousClock.now
        events.wait(epoch: epoch, timeoutNanoseconds: 10_000_000_000)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func aWaitWithATimeoutAndNoNotifyReturnsAfterTheTimeout() {
        let events = EventCount()
        events.notify()  // before prepareWait: not for this sleeper
        let epoch = events.prepareWait()
        let started = ContinuousClock.now
        events.wait(epoch: epoch, timeoutNanoseconds: 50_000_000)
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(50))
        #expect(waited < .seconds(5))
        #expect(CTroupe_eventcount_sleepers(events.raw) == 0)
    }

    @Test func aNotifyWakesAThreadAsleepInWait() async {
        let events = EventCount()
        let waits = await Self.sleepers(1, on: events) { events.notify() }
        #expect(waits.count == 1)
        #expect(waits.allSatisfy { $0.sawWork && $0.duration < .seconds(5) }, "\(waits)")
    }

    @Test func notifyAllWakesEveryWaiter() async {
        let events = EventCount()
        let waits = await Self.sleepers(3, on: events) { events.notify(all: true) }
        #expect(waits.count == 3)
        // With a notify that woke one sleeper, the other two would wait out their 10 s.
        #expect(
            waits.allSatisfy { $0.sawWork && $0.duration < .seconds(5) },
            "every waiter woke at the notify, not at its timeout: \(waits)")
    }

    @Test func cancelWaitLeavesNoSleeperBehind() {
        let events = EventCount()
        _ = events.prepareWait()
        #expect(CTroupe_eventcount_sleepers(events.raw) == 1)
        events.cancelWait()
        #expect(CTroupe_eventcount_sleepers(events.raw) == 0)
    }

    /// `notify` costs one load when nobody sleeps: it leaves the epoch alone. With a sleeper it
    /// moves the epoch by one.
    @Test func notifyMovesTheEpochOnlyWhenSomeoneSleeps() {
        let events = EventCount()
        let first = events.prepareWait()
        events.cancelWait()
        events.notify()
        let second = events.prepareWait()
        #expect(second == first, "no sleeper: the epoch stays")
        events.notify()
        let third = events.prepareWait()
        #expect(third == second &+ 1)
        events.cancelWait()
        events.cancelWait()
        #expect(CTroupe_eventcount_sleepers(events.raw) == 0)
    }

    /// A burst of notifies while the one sleeper's wake is still on its way costs one futex
    /// wake, not one each (a spawn burst from a plain thread used to issue about one per spawn).
    @Test func aBurstOfNotifiesForOneSleeperIssuesOneWake() async {
        let events = EventCount()
        let waits = await Self.sleepers(1, on: events) { for _ in 0..<1_000 { events.notify() } }
        #expect(waits.count == 1)
        #expect(waits.allSatisfy { $0.sawWork && $0.duration < .seconds(5) }, "\(waits)")
        #expect(CTroupe_eventcount_wakes(events.raw) == 1, "one wake for 1,000 notifies")
        #expect(CTroupe_eventcount_sleepers(events.raw) == 0)
        #expect(CTroupe_eventcount_pending(events.raw) == 0, "the sleeper took its pending wake with it")
    }

    /// Two sleepers, two notifies: the second notify sees one sleeper without a wake coming and
    /// wakes it too. Skipping applies only when every sleeper already has a wake on its way.
    @Test func aSecondNotifyWakesASecondSleeper() async {
        let events = EventCount()
        let waits = await Self.sleepers(2, on: events) {
            events.notify()
            events.notify()
        }
        #expect(waits.count == 2)
        #expect(
            waits.allSatisfy { $0.sawWork && $0.duration < .seconds(5) },
            "both woke at the notifies, not at their 10 s timeout: \(waits)")
        #expect(CTroupe_eventcount_wakes(events.raw) == 2)
    }

    /// A sleeper that leaves without sleeping (`cancelWait`, or a wait that returns at once)
    /// takes a pending wake with it, so the next sleeper is woken by the next notify rather than
    /// skipped as if its wake were still on its way.
    @Test func leavingTakesAPendingWakeSoTheNextSleeperIsWoken() {
        let events = EventCount()
        _ = events.prepareWait()
        events.notify()
        #expect(CTroupe_eventcount_pending(events.raw) == 1)
        events.cancelWait()
        #expect(CTroupe_eventcount_pending(events.raw) == 0)
        let epoch = events.prepareWait()
        events.notify()
        #expect(CTroupe_eventcount_wakes(events.raw) == 2, "the second sleeper got a wake of its own")
        let started = ContinuousClock.now
        events.wait(epoch: epoch, timeoutNanoseconds: 10_000_000_000)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(CTroupe_eventcount_pending(events.raw) == 0)
        #expect(CTroupe_eventcount_sleepers(events.raw) == 0)
    }

    /// No lost wake-up under contention: wakers add tokens and notify; sleepers take tokens and
    /// park when there are none. A lost wake-up leaves tokens behind while every sleeper waits
    /// out its 10 s timeout, so the tokens would not all be taken in time.
    @Test func everyTokenIsTakenWhileSleepersParkAndWakersNotify() async {
        let events = EventCount()
        let tokens = TokenPool()
        let done = Flag()
        let sleeperCount = 6
        let wakerCount = 2
        let perWaker = StressScale.scaled(100_000, minimum: 10_000)
        let longestWait = Recorder<Duration>()
        await TestThreads.run(count: sleeperCount + wakerCount + 1) { index in
            if index < sleeperCount {
                var longest = Duration.zero
                while true {
                    if tokens.take() { continue }
                    let epoch = events.prepareWait()
                    if tokens.available || done.isSet {
                        events.cancelWait()
                        if done.isSet && !tokens.available { break }
                        continue
                    }
                    let started = ContinuousClock.now
                    events.wait(epoch: epoch, timeoutNanoseconds: 10_000_000_000)
                    longest = max(longest, ContinuousClock.now - started)
                }
                longestWait.append(longest)
            } else if index < sleeperCount + wakerCount {
                for round in 0..<perWaker {
                    tokens.add()
                    events.notify()
                    if round % 64 == 0 { sched_yield() }
                }
            } else {
                waitUntilBlocking(timeout: .seconds(60), "every token added") { tokens.added == wakerCount * perWaker }
                waitUntilBlocking(timeout: .seconds(60), "every token taken") { tokens.taken == wakerCount * perWaker }
                done.set()
                events.notify(all: true)
            }
        }
        #expect(tokens.taken == wakerCount * perWaker)
        #expect(
            longestWait.values.allSatisfy { $0 < .seconds(5) },
            "a sleeper waited out its timeout while tokens were left: \(longestWait.values)")
        #expect(CTroupe_eventcount_sleepers(events.raw) == 0)
        #expect(CTroupe_eventcount_pending(events.raw) == 0)
    }

    /// Tokens for the contention test: added by wakers, taken one at a time by sleepers.
    final class TokenPool: Sendable {
        private let count = Atomic<Int>(0)
        private let addedCount = Atomic<Int>(0)
        private let takenCount = Atomic<Int>(0)

        func add() {
            addedCount.add(1, ordering: .relaxed)
            count.add(1, ordering: .sequentiallyConsistent)
        }

        func take() -> Bool {
            var current = count.load(ordering: .sequentiallyConsistent)
            while current > 0 {
                let (exchanged, original) = count.compareExchange(
                    expected: current, desired: current - 1, ordering: .sequentiallyConsistent)
                if exchanged {
                    takenCount.add(1, ordering: .relaxed)
                    return true
                }
                current = original
            }
            return false
        }

        var available: Bool { count.load(ordering: .sequentiallyConsistent) > 0 }
        var added: Int { addedCount.load(ordering: .relaxed) }
        var taken: Int { takenCount.load(ordering: .relaxed) }
    }

    /// How one sleeper's wait went.
    struct Wait: Sendable, CustomStringConvertible {
        let duration: Duration
        /// Whether the work was published when the sleeper went on.
        let sawWork: Bool
        var description: String { "\(duration)\(sawWork ? "" : " (no work)")" }
    }

    /// Runs `count` sleepers (``sleep(on:until:)``) and, once all of them are counted, publishes
    /// the work and calls `notify` on another thread; returns how each sleeper's wait went.
    static func sleepers(_ count: Int, on events: EventCount, notify: @escaping @Sendable () -> Void) async -> [Wait] {
        let published = Flag()
        let waits = Recorder<Wait>()
        await TestThreads.run(count: count + 1) { index in
            if index < count {
                waits.append(Self.sleep(on: events, until: published))
            } else {
                waitUntilBlocking("\(count) sleepers") { CTroupe_eventcount_sleepers(events.raw) == count }
                published.set()
                notify()
            }
        }
        return waits.values
    }

    /// A sleeper as the runtime's are written: take the epoch, look for work (`published`),
    /// and wait only if there is none. (Without the look, a notify that lands between the
    /// `sleepers` increment and the epoch load of `prepareWait` would be missed, by design:
    /// the sleeper would find the waker's work instead.)
    static func sleep(on events: EventCount, until published: Flag) -> Wait {
        let started = ContinuousClock.now
        let epoch = events.prepareWait()
        if published.isSet {
            events.cancelWait()
        } else {
            events.wait(epoch: epoch, timeoutNanoseconds: 10_000_000_000)
        }
        return Wait(duration: ContinuousClock.now - started, sawWork: published.isSet)
    }
}
