import CTroupe
import Testing
import TroupeTestSupport

@testable import Troupe

/// The timer heap (`DeadlineTimer`), driven directly: each test holds the timer thread inside
/// an entry's `fire()` while it schedules and cancels entries whose deadlines have already
/// passed, then lets the thread go. The thread then pops every due entry in one go, so the
/// order they fire in is the heap's order, whatever the timing of the machine.
@Suite struct DeadlineTimerTests {
    @Test func entriesFireInDeadlineOrderWhateverOrderTheyWereScheduledIn() async throws {
        let timer = DeadlineTimer(name: "heap-order")
        defer { timer.stop() }
        let fired = Recorder<String>()
        // 1...100 in a scrambled order (37 is coprime to 100).
        let deadlines = (0..<100).map { Int64(($0 * 37) % 100 + 1) }
        #expect(deadlines.sorted() == Array(1...100))
        await whileTheTimerThreadIsHeld(timer) {
            for deadline in deadlines {
                timer.schedule(NamedEntry("\(deadline)", fired), atNanoseconds: deadline)
            }
            #expect(timer.count == 100)
        }
        await waitUntil("every entry fired") { fired.count == 100 }
        #expect(fired.values == (1...100).map { "\($0)" })
        #expect(timer.count == 0)
    }

    @Test func entriesWithEqualDeadlinesAllFireOnceBetweenTheEarlierAndTheLaterOnes() async throws {
        let timer = DeadlineTimer(name: "heap-ties")
        defer { timer.stop() }
        let fired = Recorder<String>()
        await whileTheTimerThreadIsHeld(timer) {
            timer.schedule(NamedEntry("late", fired), atNanoseconds: 30)
            for name in ["tie-a", "tie-b", "tie-c", "tie-d"] {
                timer.schedule(NamedEntry(name, fired), atNanoseconds: 20)
            }
            timer.schedule(NamedEntry("early", fired), atNanoseconds: 10)
        }
        await waitUntil("every entry fired") { fired.count == 6 }
        let order = fired.values
        #expect(order.first == "early")
        #expect(order.last == "late")
        // The heap does not keep insertion order among equal deadlines: only the set is fixed.
        #expect(Set(order.dropFirst().dropLast()) == ["tie-a", "tie-b", "tie-c", "tie-d"])
        #expect(order.count == 6, "each fired once")
    }

    @Test func aCancelledEntryInTheMiddleNeverFiresAndTheOthersKeepTheirOrder() async throws {
        let timer = DeadlineTimer(name: "heap-cancel")
        defer { timer.stop() }
        let fired = Recorder<String>()
        await whileTheTimerThreadIsHeld(timer) {
            // Inserted in this order, the heap's array is [1, 10, 2, 11, 12, 3, 4]: removing 11
            // (under 10) puts the last entry, 4, in its place, which must then move up.
            var entries: [Int64: NamedEntry] = [:]
            for deadline: Int64 in [1, 10, 2, 11, 12, 3, 4] {
                let entry = NamedEntry("\(deadline)", fired)
                entries[deadline] = entry
                timer.schedule(entry, atNanoseconds: deadline)
            }
            timer.cancel(entries[11]!)
            #expect(timer.count == 6)
            timer.cancel(entries[11]!)  // a second cancel changes nothing
            timer.cancel(NamedEntry("never scheduled", fired))
            #expect(timer.count == 6)
        }
        await waitUntil("the rest fired") { fired.count == 6 }
        #expect(fired.values == ["1", "2", "3", "4", "10", "12"])
        #expect(timer.count == 0)
    }

    @Test func cancellingEveryThirdOfManyEntriesLeavesTheRestInDeadlineOrder() async throws {
        let timer = DeadlineTimer(name: "heap-cancel-many")
        defer { timer.stop() }
        let fired = Recorder<String>()
        var kept: [Int64] = []
        await whileTheTimerThreadIsHeld(timer) {
            var entries: [(Int64, NamedEntry)] = []
            for index in 0..<97 {
                let deadline = Int64((index * 29) % 97 + 1)  // 1...97, scrambled
                let entry = NamedEntry("\(deadline)", fired)
                entries.append((deadline, entry))
                timer.schedule(entry, atNanoseconds: deadline)
            }
            // Cancel in yet another order, from everywhere in the heap.
            for (deadline, entry) in entries.reversed() {
                if deadline % 3 == 0 { timer.cancel(entry) } else { kept.append(deadline) }
            }
            #expect(timer.count == kept.count)
        }
        await waitUntil("the rest fired") { fired.count == kept.count }
        #expect(fired.values == kept.sorted().map { "\($0)" })
    }

    @Test func aCancelledEntryScheduledAgainFiresOnceAtItsNewDeadline() async throws {
        let timer = DeadlineTimer(name: "heap-reschedule")
        defer { timer.stop() }
        let fired = Recorder<String>()
        await whileTheTimerThreadIsHeld(timer) {
            let moved = NamedEntry("moved", fired)
            timer.schedule(moved, atNanoseconds: 10)
            timer.schedule(NamedEntry("20", fired), atNanoseconds: 20)
            timer.schedule(NamedEntry("30", fired), atNanoseconds: 30)
            timer.cancel(moved)
            timer.schedule(moved, atNanoseconds: 25)
            #expect(moved.deadline == 25)
            #expect(timer.count == 3)
        }
        await waitUntil("every entry fired") { fired.count == 3 }
        #expect(fired.values == ["20", "moved", "30"])
    }

    /// Periodic timers schedule themselves again from `fire()`, on the timer thread.
    @Test func anEntryThatReschedulesItselfFromFireFiresAgain() async throws {
        let timer = DeadlineTimer(name: "heap-periodic")
        defer { timer.stop() }
        let fired = Recorder<String>()
        let periodic = RepeatingEntry(times: 3, timer: timer, fired: fired)
        timer.schedule(periodic, atNanoseconds: 1)
        await waitUntil("three firings") { fired.count == 3 }
        #expect(fired.values == ["tick 1", "tick 2", "tick 3"])
        #expect(periodic.deadline == 3, "each firing rescheduled it one nanosecond later")
        await waitUntil("nothing left") { timer.count == 0 }
    }

    @Test(arguments: [Duration.seconds(Int64.max), .nanoseconds(Int64.max), .seconds(1 << 40)])
    func aHugeDelaySaturatesJustBelowTheLargestDeadline(delay: Duration) async throws {
        let timer = DeadlineTimer(name: "saturation")
        let fired = Recorder<String>()
        let entry = NamedEntry("huge", fired)
        timer.schedule(entry, after: delay)
        #expect(entry.deadline == Int64.max - 1)
        #expect(timer.count == 1)
        timer.stop()
        #expect(fired.values == ["huge at shutdown"], "it never fired on time, and fired once at shutdown")
        #expect(timer.count == 0)
    }

    @Test func aDelayIsAddedToTheMonotonicClock() async throws {
        let timer = DeadlineTimer(name: "relative")
        defer { timer.stop() }
        let entry = NamedEntry("hour", Recorder())
        let before = CTroupe_monotonic_ns()
        timer.schedule(entry, after: .seconds(3600))
        let after = CTroupe_monotonic_ns()
        #expect((before + 3_600_000_000_000...after + 3_600_000_000_000).contains(entry.deadline))
    }

    @Test(arguments: [Duration.zero, .milliseconds(-5), .seconds(Int64.min)])
    func aDelayOfZeroOrLessIsDueAtOnce(delay: Duration) async throws {
        let timer = DeadlineTimer(name: "due-now")
        defer { timer.stop() }
        let fired = Recorder<String>()
        let entry = NamedEntry("now", fired)
        let before = CTroupe_monotonic_ns()
        timer.schedule(entry, after: delay)
        let after = CTroupe_monotonic_ns()
        #expect((before...after).contains(entry.deadline))
        await waitUntil("it fired") { fired.count == 1 }
        #expect(fired.values == ["now"])
    }

    @Test func stopFiresEveryPendingEntryOnceAtShutdownAndLaterEntriesNever() async throws {
        let timer = DeadlineTimer(name: "stop")
        let fired = Recorder<String>()
        for name in ["a", "b", "c"] { timer.schedule(NamedEntry(name, fired), after: .seconds(3600)) }
        timer.stop()
        #expect(fired.values.sorted() == ["a at shutdown", "b at shutdown", "c at shutdown"])
        #expect(timer.count == 0)
        // `stop` joined the timer thread before it returned, so nothing is left that could fire
        // an entry scheduled now: it stays in the heap, due and unfired (no sleep needed).
        timer.schedule(NamedEntry("after stop", fired), atNanoseconds: 0)
        #expect(timer.count == 1, "the late entry is kept, not fired")
        #expect(fired.count == 3, "nothing fires once the timer thread has stopped")
    }

    // MARK: Helpers

    /// Runs `body` while the timer thread is held inside the `fire()` of an entry that was due
    /// at once, then lets the thread go.
    /// Completed asks stay in the heap (no lock and no removal when they complete): the
    /// insertion that doubles the heap purges every done entry, and what stays keeps its
    /// deadline order.
    @Test func doneEntriesArePurgedWhenTheHeapDoublesAndTheRestKeepTheirOrder() async throws {
        let timer = DeadlineTimer(name: "heap-purge")
        defer { timer.stop() }
        let fired = Recorder<String>()
        let far = CTroupe_monotonic_ns() + 3_600_000_000_000
        await whileTheTimerThreadIsHeld(timer) {
            // 1,013 entries that will be done, far in the future, and 10 that stay, due at
            // once, scheduled in a scrambled order among them.
            var done: [DoneFlagEntry] = []
            for index in 0..<1_023 {
                if index % 100 == 7 && index / 100 < 10 {
                    let rank = (index / 100 * 3) % 10 + 1
                    timer.schedule(NamedEntry("\(rank)", fired), atNanoseconds: Int64(rank))
                } else {
                    let entry = DoneFlagEntry()
                    done.append(entry)
                    timer.schedule(entry, atNanoseconds: far + Int64(index))
                }
            }
            #expect(timer.count == 1_023)
            for entry in done { entry.isMarkedDone = true }
            #expect(timer.count == 1_023, "done entries stay until the heap doubles")
            // The 1,024th insertion reaches the threshold (1,024) and purges.
            timer.schedule(DoneFlagEntry(), atNanoseconds: far)
            #expect(timer.count == 11)
        }
        await waitUntil("the kept entries fired") { fired.count == 10 }
        #expect(fired.values == (1...10).map { "\($0)" })
    }

    private func whileTheTimerThreadIsHeld(_ timer: DeadlineTimer, _ body: () -> Void) async {
        let gate = Gate(safetyTimeout: .seconds(30))
        timer.schedule(HoldingEntry(gate), atNanoseconds: 0)
        await waitUntil("the timer thread is held") { gate.entered == 1 }
        body()
        gate.open()
    }
}

/// Records its name when it fires, and "<name> at shutdown" when the timer stops first.
private final class NamedEntry: TimerEntry, @unchecked Sendable {  // immutable; the base's fields belong to the timer
    let name: String
    let fired: Recorder<String>

    init(_ name: String, _ fired: Recorder<String>) {
        self.name = name
        self.fired = fired
    }

    override func fire() { fired.append(name) }
    override func fireAtShutdown() { fired.append("\(name) at shutdown") }
}

/// Holds the timer thread at a gate.
private final class HoldingEntry: TimerEntry, @unchecked Sendable {  // immutable
    let gate: Gate
    init(_ gate: Gate) { self.gate = gate }
    override func fire() { gate.enter() }
    override func fireAtShutdown() {}
}

/// Fires `times` times, scheduling itself again one nanosecond after its previous deadline.
private final class RepeatingEntry: TimerEntry, @unchecked Sendable {  // `count` is touched only on the timer thread
    let times: Int
    let timer: DeadlineTimer
    let fired: Recorder<String>
    private var count = 0

    init(times: Int, timer: DeadlineTimer, fired: Recorder<String>) {
        self.times = times
        self.timer = timer
        self.fired = fired
    }

    override func fire() {
        count += 1
        fired.append("tick \(count)")
        if count < times { timer.schedule(self, atNanoseconds: deadline + 1) }
    }

    override func fireAtShutdown() {}
}

/// An entry whose `isDone` the test sets (as an ask's completion does).
private final class DoneFlagEntry: TimerEntry, @unchecked Sendable {  // flag set before the reading insert, same thread
    var isMarkedDone = false
    override var isDone: Bool { isMarkedDone }
    override func fire() {}
    override func fireAtShutdown() {}
}
