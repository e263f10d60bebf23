import Testing
import TroupeTestSupport

@testable import Troupe
@testable import TroupeSupervision

/// The supervisor's planner (`SupervisorState.planFailure` and the helpers it uses), driven
/// directly, without actors: which children a failure restarts or stops, in which order and
/// why, when the restart intensity turns a restart into a stop or an escalation, and the
/// backoff delay of each restart. Time is passed in, so every expectation is exact.
@Suite struct SupervisionPlannerTests {
    private let start = ContinuousClock.now

    // MARK: Scopes

    @Test func oneForOneRestartsOnlyTheFailingChild() {
        var planner = Planner(children: ["a", "b", "c"], scope: .oneForOne)
        let result = planner.fail("b", .restart, at: start)
        #expect(result.outcome == .handled(.restart))
        #expect(result.orders == [.restart("b", delay: .zero)])
        #expect(result.events == [.restarted("b", .failed, .zero)])
        #expect(planner.restarts == ["a": 0, "b": 1, "c": 0])
        #expect(planner.failures == ["a": 0, "b": 1, "c": 0])
    }

    @Test func allForOneRestartsEveryChildWithTheFailingOneFirst() {
        var planner = Planner(children: ["a", "b", "c"], scope: .allForOne)
        let result = planner.fail("b", .restart, at: start)
        #expect(result.outcome == .handled(.restart))
        #expect(
            result.orders == [.restart("b", delay: .zero), .restart("a", delay: .zero), .restart("c", delay: .zero)])
        #expect(
            result.events == [
                .restarted("b", .failed, .zero), .restarted("a", .sibling("b"), .zero),
                .restarted("c", .sibling("b"), .zero),
            ])
        #expect(planner.restarts == ["a": 1, "b": 1, "c": 1])
        #expect(planner.failures == ["a": 0, "b": 1, "c": 0], "only the failing child's failure counts")
    }

    @Test func restForOneRestartsTheFailingChildAndThoseSupervisedAfterIt() {
        var planner = Planner(children: ["a", "b", "c", "d"], scope: .restForOne)
        let result = planner.fail("b", .restart, at: start)
        #expect(
            result.orders == [.restart("b", delay: .zero), .restart("c", delay: .zero), .restart("d", delay: .zero)])
        #expect(result.events.map(\.cause) == [.failed, .sibling("b"), .sibling("b")])
        #expect(planner.restarts == ["a": 0, "b": 1, "c": 1, "d": 1])

        let last = planner.fail("d", .restart, at: start + .seconds(1))
        #expect(last.orders == [.restart("d", delay: .zero)], "nothing is supervised after the last child")
    }

    @Test func aRestartAlsoRestartsTheChildrenLinkedToARestartedChildRecursively() {
        var planner = Planner(children: ["a", "b", "c", "d"], scope: .oneForOne)
        planner.link("c", toParent: "a")
        planner.link("d", toParent: "c")
        let result = planner.fail("a", .restart, at: start)
        #expect(
            result.orders == [.restart("a", delay: .zero), .restart("c", delay: .zero), .restart("d", delay: .zero)])
        #expect(
            result.events == [
                .restarted("a", .failed, .zero), .restarted("c", .linkedParent("a"), .zero),
                .restarted("d", .linkedParent("c"), .zero),
            ])
        #expect(planner.restarts == ["a": 1, "b": 0, "c": 1, "d": 1])
    }

    @Test func aStopUnderAllForOneStopsAndForgetsEveryChild() {
        var planner = Planner(children: ["a", "b", "c"], scope: .allForOne)
        let result = planner.fail("c", .stop, at: start)
        #expect(result.outcome == .handled(.stop))
        #expect(result.orders == [.stop("c"), .stop("a"), .stop("b")])
        #expect(result.events == [.stopped("c", .failed), .stopped("a", .sibling("c")), .stopped("b", .sibling("c"))])
        #expect(planner.state.entries.isEmpty)
        #expect(planner.state.order.isEmpty)
    }

    @Test func aStopOfAChildRemovesItsLinks() {
        var planner = Planner(children: ["a", "b"], scope: .oneForOne)
        planner.link("b", toParent: "a")
        let result = planner.fail("a", .stop, at: start)
        #expect(result.orders == [.stop("a"), .stop("b")])
        #expect(result.events == [.stopped("a", .failed), .stopped("b", .linkedParent("a"))])
        #expect(planner.state.linkedChildren.isEmpty)
        #expect(planner.state.linkedParents.isEmpty)
    }

    @Test func resumeKeepsTheChildAndOrdersNothing() {
        var planner = Planner(children: ["a", "b"], scope: .allForOne)
        let result = planner.fail("a", .resume, at: start, fromActor: true)
        #expect(result.outcome == .handled(.resume))
        #expect(result.orders.isEmpty)
        #expect(result.events == [.resumed("a")])
        #expect(result.actors == [Planner.failingActor], "the event names the actor that failed")
        #expect(result.originDirective == .resume)
        #expect(planner.failures == ["a": 1, "b": 0])
        #expect(planner.restarts == ["a": 0, "b": 0])
    }

    // MARK: Restart intensity

    @Test func exceedingTheRestartIntensityStopsTheChild() {
        let intensity = RestartIntensity(maxRestarts: 2, within: .seconds(1))
        var planner = Planner(children: ["a", "b"], scope: .allForOne, intensity: intensity)
        #expect(planner.fail("a", .restart, at: start).outcome == .handled(.restart))
        #expect(planner.fail("a", .restart, at: start + .milliseconds(100)).outcome == .handled(.restart))
        let third = planner.fail("a", .restart, at: start + .milliseconds(200))
        #expect(third.outcome == .handled(.stop))
        #expect(
            third.events == [
                .intensityExceeded("a", restarts: 2, within: .seconds(1)), .stopped("a", .intensityExceeded),
                .stopped("b", .sibling("a")),
            ])
        #expect(third.orders == [.stop("a"), .stop("b")], "the stop takes the scope, like a decided stop")
        #expect(planner.state.entries.isEmpty)
    }

    @Test func restartsOlderThanTheWindowNoLongerCount() {
        let intensity = RestartIntensity(maxRestarts: 2, within: .seconds(1))
        var planner = Planner(children: ["a"], scope: .oneForOne, intensity: intensity)
        _ = planner.fail("a", .restart, at: start)
        _ = planner.fail("a", .restart, at: start + .milliseconds(500))
        // One window after the first restart, that one has left the window: one restart left.
        #expect(planner.fail("a", .restart, at: start + .seconds(1)).outcome == .handled(.restart))
        // Now the restarts at 0.5 s and 1 s are inside the window.
        let refused = planner.fail("a", .restart, at: start + .milliseconds(1499))
        #expect(refused.outcome == .handled(.stop))
        #expect(refused.events.first == .intensityExceeded("a", restarts: 2, within: .seconds(1)))
    }

    @Test func aZeroIntensityAllowsNoRestart() {
        let intensity = RestartIntensity(maxRestarts: 0, within: .seconds(5), whenExceeded: .stop)
        var planner = Planner(children: ["a"], scope: .oneForOne, intensity: intensity)
        let result = planner.fail("a", .restart, at: start)
        #expect(result.outcome == .handled(.stop))
        #expect(
            result.events == [
                .intensityExceeded("a", restarts: 0, within: .seconds(5)), .stopped("a", .intensityExceeded),
            ])
    }

    @Test func anUnlimitedIntensityRestartsEveryTime() {
        var planner = Planner(children: ["a"], scope: .oneForOne, intensity: .unlimited)
        for step in 0..<1000 {
            let result = planner.fail("a", .restart, at: start + .microseconds(step))
            #expect(result.outcome == .handled(.restart))
        }
        #expect(planner.restarts == ["a": 1000])
        #expect(planner.state.entries["a"]?.restartTimes.isEmpty == true, "nothing to count")
    }

    @Test func aTopLevelSupervisorEscalatingStopsOnlyTheChildAndItsLinkedChildren() {
        let intensity = RestartIntensity(maxRestarts: 1, within: .seconds(1), whenExceeded: .escalate)
        var planner = Planner(children: ["a", "b", "c"], scope: .allForOne, intensity: intensity)
        planner.link("c", toParent: "a")
        _ = planner.fail("a", .restart, at: start)
        let result = planner.fail("a", .restart, at: start + .milliseconds(10))
        #expect(result.outcome == .handled(.escalate))
        #expect(
            result.events == [
                .intensityExceeded("a", restarts: 1, within: .seconds(1)), .escalated("a", toParent: nil),
                .stopped("a", .escalated), .stopped("c", .linkedParent("a")),
            ])
        #expect(result.orders == [.stop("a"), .stop("c")], "no sibling: escalation is not a decided stop")
        #expect(Set(planner.state.entries.keys) == ["b"])
    }

    @Test func aNestedSupervisorEscalatesToItsParentAsAFailureOfItsOwnId() async throws {
        try await withTestSystem { system in
            let parent = Supervisor(system: system, name: "parent")
            let group = Planner.record("group", kind: .supervisor)
            let intensity = RestartIntensity(maxRestarts: 1, within: .seconds(1), whenExceeded: .escalate)
            var planner = Planner(
                children: ["a", "b"], scope: .oneForOne, intensity: intensity,
                parent: ParentLink(supervisor: parent, record: group))

            let decided = planner.fail("b", .escalate, at: start)
            #expect(decided.outcome == .escalated(to: "parent", as: "group"))
            #expect(decided.orders.isEmpty, "the parent decides for the whole group")
            #expect(decided.events == [.escalated("b", toParent: "parent")])

            _ = planner.fail("a", .restart, at: start)
            let exceeded = planner.fail("a", .restart, at: start + .milliseconds(10))
            #expect(exceeded.outcome == .escalated(to: "parent", as: "group"))
            #expect(
                exceeded.events == [
                    .intensityExceeded("a", restarts: 1, within: .seconds(1)), .escalated("a", toParent: "parent"),
                ])
            #expect(Set(planner.state.entries.keys) == ["a", "b"], "nothing was removed")
            withExtendedLifetime(parent) {}
        }
    }

    // MARK: Pools, detached children

    @Test func aPoolMembersFailureRestartsOnlyThatMemberThroughItsDirective() {
        let backoff = RestartBackoff.exponential(
            initial: .milliseconds(100), maximum: .seconds(1), multiplier: 2, jitter: 0)
        var planner = Planner(children: ["pool", "other"], kinds: ["pool": .pool], scope: .allForOne, backoff: backoff)
        let result = planner.fail("pool", .restart, at: start, fromActor: true)
        #expect(result.outcome == .handled(.restart))
        #expect(result.orders.isEmpty, "no restart of the whole pool, no sibling")
        #expect(result.originDirective == .restart(after: .milliseconds(100)))
        #expect(result.events == [.restarted("pool", .failed, .milliseconds(100))])
        #expect(result.actors == [Planner.failingActor])
        #expect(planner.restarts == ["pool": 1, "other": 0])
    }

    @Test func aFailureOfAChildThatIsNoLongerSupervisedIsDetached() {
        var planner = Planner(children: ["a"], scope: .oneForOne)
        let old = planner.records["a"]!
        // The id was unsupervised and supervised again: the old record's actors are strangers.
        planner.state.remove("a")
        planner.add(Planner.record("a"))
        var plan = planner.state.makePlan()
        let outcome = planner.state.planFailure(
            of: old, error: Boom("late"), decision: .restart, origin: nil, scope: .oneForOne, now: start,
            into: &plan)
        #expect(Outcome(outcome) == .detached)
        #expect(plan.operations.isEmpty && plan.events.isEmpty)
        #expect(planner.failures == ["a": 0])

        planner.state.isClosed = true
        #expect(planner.fail("a", .restart, at: start).outcome == .detached, "a closed supervisor plans nothing")
    }

    // MARK: Backoff

    @Test func backoffDelaysGrowWithConsecutiveRestartsAndEveryRestartedChildWaitsThem() {
        let backoff = RestartBackoff.exponential(
            initial: .milliseconds(100), maximum: .seconds(1), multiplier: 2, jitter: 0)
        var planner = Planner(children: ["a", "b"], scope: .allForOne, intensity: .unlimited, backoff: backoff)
        var delays: [Duration] = []
        for step in 0..<6 {
            let result = planner.fail("a", .restart, at: start + .milliseconds(step))
            delays.append(result.events.first?.delay ?? .zero)
            #expect(Set(result.orders.map(\.delay)).count == 1, "the whole group waits one delay")
        }
        #expect(delays == [100, 200, 400, 800, 1000, 1000].map { Duration.milliseconds($0) })
    }

    @Test func aQuietPeriodOfResetAfterStartsTheBackoffAgain() {
        let backoff = RestartBackoff.exponential(
            initial: .milliseconds(100), maximum: .seconds(1), multiplier: 2, jitter: 0, resetAfter: .seconds(2))
        var planner = Planner(children: ["a"], scope: .oneForOne, intensity: .unlimited, backoff: backoff)
        func delay(at time: ContinuousClock.Instant) -> Duration? {
            planner.fail("a", .restart, at: time).events.first?.delay
        }
        #expect(delay(at: start) == .milliseconds(100))  // due at 0.1 s
        #expect(delay(at: start + .milliseconds(200)) == .milliseconds(200))  // due at 0.4 s
        // 1.999 s after the last restart was due: not quiet long enough.
        #expect(delay(at: start + .milliseconds(2399)) == .milliseconds(400))  // due at 2.799 s
        // 2 s after it was due: the sequence starts again.
        #expect(delay(at: start + .milliseconds(4799)) == .milliseconds(100))
    }

    @Test func exponentialBackoffWithoutJitterDoublesUpToTheMaximum() {
        let backoff = RestartBackoff.exponential(
            initial: .milliseconds(100), maximum: .seconds(1), multiplier: 2, jitter: 0)
        let delays = (1...6).map { backoff.delay(forConsecutiveRestart: $0) }
        #expect(delays == [100, 200, 400, 800, 1000, 1000].map { Duration.milliseconds($0) })
        #expect(backoff.delay(forConsecutiveRestart: 10_000) == .seconds(1), "no overflow far along")
        #expect(backoff.delay(forConsecutiveRestart: 0) == .zero)
        #expect(backoff.resetAfter == .seconds(1), "by default, the maximum")
    }

    @Test func jitterOnlyLengthensADelayByUpToItsFraction() {
        let backoff = RestartBackoff.exponential(
            initial: .milliseconds(100), maximum: .seconds(1), multiplier: 2, jitter: 0.2)
        #expect(backoff.delay(forConsecutiveRestart: 1, jitterSample: 0) == .milliseconds(100))
        #expect(backoff.delay(forConsecutiveRestart: 1, jitterSample: 0.5) == .milliseconds(110))
        #expect(backoff.delay(forConsecutiveRestart: 2, jitterSample: 0.25) == .milliseconds(210))
        #expect(backoff.delay(forConsecutiveRestart: 1, jitterSample: 7) == .milliseconds(120), "samples are clamped")
        #expect(backoff.delay(forConsecutiveRestart: 1, jitterSample: -1) == .milliseconds(100))
        #expect(backoff.delay(forConsecutiveRestart: 9, jitterSample: 1) == .milliseconds(1200), "above the maximum")
        for _ in 0..<100 {
            let delay = backoff.delay(forConsecutiveRestart: 3)
            #expect(delay >= .milliseconds(400) && delay <= .milliseconds(480))
        }
    }

    @Test func noBackoffMeansNoDelay() {
        #expect(
            (0...5).map { RestartBackoff.none.delay(forConsecutiveRestart: $0) } == Array(repeating: .zero, count: 6))
        #expect(RestartBackoff.none.isNone)
        var planner = Planner(children: ["a"], scope: .oneForOne, intensity: .unlimited, backoff: .none)
        #expect(planner.fail("a", .restart, at: start).events == [.restarted("a", .failed, .zero)])
    }
}

// MARK: - A supervisor's state with a few children

/// A `SupervisorState` with children (no actors behind them), and failures fed to its planner.
private struct Planner {
    static let failingActor = ActorAddress(id: 42, name: "failing")

    var state: SupervisorState
    private(set) var records: [String: ChildRecord] = [:]
    let scope: RestartScope

    init(
        children: [String], kinds: [String: ChildRecord.Kind] = [:], scope: RestartScope,
        intensity: RestartIntensity = .default, backoff: RestartBackoff = .none, parent: ParentLink? = nil
    ) {
        let observers = ObserverList<@Sendable (SupervisionEvent) -> Void>()
        observers.add { _ in }  // plans record events only when someone observes them
        state = SupervisorState(name: "planner", parent: parent, observers: observers)
        self.scope = scope
        for id in children {
            add(Self.record(id, kind: kinds[id] ?? .actor, intensity: intensity, backoff: backoff))
        }
    }

    static func record(
        _ id: String, kind: ChildRecord.Kind = .actor, intensity: RestartIntensity = .default,
        backoff: RestartBackoff = .none
    ) -> ChildRecord {
        let policy = ResolvedPolicy(
            decider: { _ in .restart }, intensity: intensity, backoff: backoff, failingMessage: .deadLetter)
        return ChildRecord(id: id, kind: kind, policy: policy)
    }

    mutating func add(_ record: ChildRecord) {
        records[record.id] = record
        state.entries[record.id] = ChildEntry(record: record)
        state.order.append(record.id)
    }

    mutating func link(_ child: String, toParent parent: String) {
        state.linkedChildren[parent, default: []].append(child)
        state.linkedParents[child, default: []].append(parent)
    }

    /// The child `id` fails at `time` and its decider answered `decision`. `fromActor`: the
    /// failure comes from one of its actors (rather than `reportFailure`).
    mutating func fail(
        _ id: String, _ decision: SupervisionDirective, at time: ContinuousClock.Instant, fromActor: Bool = false
    ) -> PlanResult {
        let record = records[id]!
        var plan = state.makePlan()
        let origin = fromActor ? FailureOrigin(record: record, actor: Self.failingActor) : nil
        let outcome = state.planFailure(
            of: record, error: Boom(id), decision: decision, origin: origin, scope: scope, now: time, into: &plan)
        return PlanResult(
            outcome: Outcome(outcome), orders: plan.operations.map(PlannedOrder.init),
            events: plan.events.map(Seen.init), actors: plan.events.compactMap(\.actor),
            originDirective: plan.originDirective)
    }

    var restarts: [String: Int] { state.entries.mapValues(\.restarts) }
    var failures: [String: Int] { state.entries.mapValues(\.failures) }
}

private struct PlanResult {
    let outcome: Outcome
    let orders: [PlannedOrder]
    let events: [Seen]
    /// The actors named by the events, in order.
    let actors: [ActorAddress]
    let originDirective: FailureDirective?
}

/// `FailurePlanOutcome`, comparable.
private enum Outcome: Equatable {
    case detached
    case handled(SupervisionDirective)
    case escalated(to: String, as: String)

    init(_ outcome: FailurePlanOutcome) {
        switch outcome {
        case .detached: self = .detached
        case .handled(let directive): self = .handled(directive)
        case .escalate(let parent, let record): self = .escalated(to: parent.name, as: record.id)
        }
    }
}

/// A `SupervisionOperation`, comparable: which child, and for a restart the delay it waits.
private enum PlannedOrder: Equatable {
    case restart(String, delay: Duration)
    case stop(String)

    init(_ operation: SupervisionOperation) {
        switch operation {
        case .restart(let record, _, let order): self = .restart(record.id, delay: order.originDelay)
        case .stop(let record, _): self = .stop(record.id)
        }
    }

    var delay: Duration? {
        if case .restart(_, let delay) = self { return delay }
        return nil
    }
}

/// A `SupervisionEvent`, comparable.
private enum Seen: Equatable {
    case restarted(String, RestartCause, Duration)
    case resumed(String)
    case stopped(String, StopCause)
    case escalated(String, toParent: String?)
    case intensityExceeded(String, restarts: Int, within: Duration)
    case terminated(String)

    init(_ event: SupervisionEvent) {
        switch event.kind {
        case .restarted(let cause, let delay): self = .restarted(event.id, cause, delay)
        case .resumed: self = .resumed(event.id)
        case .stopped(let cause): self = .stopped(event.id, cause)
        case .escalated(let parent): self = .escalated(event.id, toParent: parent)
        case .intensityExceeded(let restarts, let window):
            self = .intensityExceeded(event.id, restarts: restarts, within: window)
        case .terminated: self = .terminated(event.id)
        }
    }

    var cause: RestartCause? {
        if case .restarted(_, let cause, _) = self { return cause }
        return nil
    }

    var delay: Duration? {
        if case .restarted(_, _, let delay) = self { return delay }
        return nil
    }
}
