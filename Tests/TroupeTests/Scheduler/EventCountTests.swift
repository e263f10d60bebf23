import CTroupe
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
        let published = Flag()
        let waits = Recorder<Wait>()
        await TestThreads.run(count: 2) { index in
            if index == 0 {
                waits.append(Self.sleep(on: events, until: published))
            } else {
                waitUntilBlocking("the sleeper prepared") { CTroupe_eventcount_sleepers(events.raw) == 1 }
                published.set()
                events.notify()
            }
        }
        #expect(waits.values.count == 1)
        #expect(waits.values.allSatisfy { $0.sawWork && $0.duration < .seconds(5) }, "\(waits.values)")
    }

    @Test func notifyAllWakesEveryWaiter() async {
        let events = EventCount()
        let published = Flag()
        let waits = Recorder<Wait>()
        await TestThreads.run(count: 4) { index in
            if index < 3 {
                waits.append(Self.sleep(on: events, until: published))
            } else {
                waitUntilBlocking("three sleepers") { CTroupe_eventcount_sleepers(events.raw) == 3 }
                published.set()
                events.notify(all: true)
            }
        }
        #expect(waits.values.count == 3)
        // With a notify that woke one sleeper, the other two would wait out their 10 s.
        #expect(
            waits.values.allSatisfy { $0.sawWork && $0.duration < .seconds(5) },
            "every waiter woke at the notify, not at its timeout: \(waits.values)")
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

    /// How one sleeper's wait went.
    struct Wait: Sendable, CustomStringConvertible {
        let duration: Duration
        /// Whether the work was published when the sleeper went on.
        let sawWork: Bool
        var description: String { "\(duration)\(sawWork ? "" : " (no work)")" }
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
