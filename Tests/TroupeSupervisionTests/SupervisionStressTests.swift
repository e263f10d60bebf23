import Testing
import Troupe
import TroupeSupervision
import TroupeTestSupport

/// Crash storms: 10^5 failures (scaled by `StressScale`; a tenth under TSan) from several
/// producer threads, with checksums proving that every message sent was either handled or
/// dead-lettered as the failing message, never lost to a restart.
///
/// `TROUPE_STRESS_SCALE=0.1 swift test --filter SupervisionStressTests` for a quick run;
/// `swift test --sanitize=thread --filter SupervisionStressTests` scales itself down.
@Suite(.serialized) struct SupervisionStressTests {
    /// Failures per storm.
    static let failures = StressScale.scaled(100_000, minimum: 1_000)
    static let children = 4

    /// What the storm's actors and the dead-letter office report.
    final class Tally: Sendable {
        let handledCount = AtomicCounter()
        let handledSum = AtomicCounter()
        let deadCount = AtomicCounter()
        let deadSum = AtomicCounter()
        let instances = AtomicCounter()
        let restartEvents = AtomicCounter()
        let otherEvents = AtomicCounter()

        /// Counts the failing messages dead-lettered in `system`, and the supervisor's events.
        func observe(_ system: ActorSystem, _ supervisor: Supervisor) {
            system.deadLetters.observe { [self] letter in
                guard case .handlerFailed = letter.reason, let value = letter.message as? Int else { return }
                deadCount.increment()
                deadSum.increment(by: value)
            }
            supervisor.observe { [self] event in
                if event.isRestart { restartEvents.increment() } else { otherEvents.increment() }
            }
        }
    }

    /// Fails on every even value. With `failsOnlyWhenUsed` it fails only if this instance has
    /// handled something already, so the retry of a failing message on a fresh instance
    /// succeeds.
    struct StormActor: ActorDefinition {
        typealias Message = Int
        let tally: Tally
        let failsOnlyWhenUsed: Bool
        var handled = 0

        init(tally: Tally, failsOnlyWhenUsed: Bool) {
            self.tally = tally
            self.failsOnlyWhenUsed = failsOnlyWhenUsed
            tally.instances.increment()
        }

        mutating func receive(_ value: Int, context: ActorContext<Int>) throws {
            if value % 2 == 0 && (!failsOnlyWhenUsed || handled > 0) { throw Boom("storm") }
            handled += 1
            tally.handledCount.increment()
            tally.handledSum.increment(by: value)
        }
    }

    /// The values sent to child `child`: `perChild` of them, half even (failing).
    static func values(child: Int, perChild: Int) -> [Int] { (1...perChild).map { child * 1_000_000_000 + $0 } }

    /// Sends every child its values from two producer threads each (odd and even values
    /// interleaved by the scheduler), then waits until each one is handled or dead-lettered.
    /// Returns (sent, their sum).
    static func storm(_ refs: [ActorRef<Int>], tally: Tally) async -> (count: Int, sum: Int) {
        let perChild = 2 * failures / refs.count
        let refused = AtomicCounter()
        await TestThreads.run(count: refs.count * 2) { producer in
            let child = producer / 2
            for value in values(child: child, perChild: perChild) where value % 2 == producer % 2 {
                if !refs[child].tell(value).isEnqueued { refused.increment() }
            }
        }
        #expect(refused.value == 0)
        let count = perChild * refs.count
        let sum = refs.indices.reduce(0) { $0 + values(child: $1, perChild: perChild).reduce(0, +) }
        await waitUntil(timeout: StressScale.drainTimeout, "every message handled or dead-lettered") {
            tally.handledCount.value + tally.deadCount.value >= count
        }
        return (count, sum)
    }

    @Test func crashStormUnderOneForOneRestart() async throws {
        try await withTestSystem { system in
            let tally = Tally()
            let supervisor = Supervisor(system: system, strategy: .oneForOne(intensity: .unlimited))
            tally.observe(system, supervisor)
            let refs = try (0..<Self.children).map { index in
                try supervisor.supervise(id: "storm-\(index)") { StormActor(tally: tally, failsOnlyWhenUsed: false) }
            }
            let sent = await Self.storm(refs, tally: tally)

            #expect(tally.handledCount.value + tally.deadCount.value == sent.count)
            #expect(tally.handledSum.value + tally.deadSum.value == sent.sum, "checksum: nothing lost, nothing twice")
            #expect(tally.deadCount.value == sent.count / 2, "exactly the failing (even) messages were dead-lettered")
            #expect(system.deadLetters.total == tally.deadCount.value, "no other dead letters")
            #expect(tally.restartEvents.value == Self.failures)
            #expect(tally.otherEvents.value == 0)
            #expect(tally.instances.value == Self.failures + Self.children, "one fresh instance per failure")
            let restarts = refs.indices.compactMap { supervisor.restartCount(of: "storm-\($0)") }.reduce(0, +)
            #expect(restarts == Self.failures)
            #expect(refs.allSatisfy { !$0.isStopped })
        }
    }

    @Test func crashStormUnderAllForOneRestart() async throws {
        try await withTestSystem { system in
            let tally = Tally()
            let supervisor = Supervisor(system: system, strategy: .allForOne(intensity: .unlimited))
            tally.observe(system, supervisor)
            let refs = try (0..<Self.children).map { index in
                try supervisor.supervise(id: "storm-\(index)") { StormActor(tally: tally, failsOnlyWhenUsed: false) }
            }
            let sent = await Self.storm(refs, tally: tally)

            #expect(tally.handledCount.value + tally.deadCount.value == sent.count)
            #expect(tally.handledSum.value + tally.deadSum.value == sent.sum, "checksum: sibling restarts lose nothing")
            #expect(tally.deadCount.value == sent.count / 2)
            #expect(system.deadLetters.total == tally.deadCount.value, "no other dead letters")
            // Every failure restarts every child: the failing one through its directive, the
            // siblings through restart requests (concurrent requests may coalesce).
            #expect(tally.restartEvents.value == Self.failures * Self.children)
            let restarts = refs.indices.compactMap { supervisor.restartCount(of: "storm-\($0)") }.reduce(0, +)
            #expect(restarts == Self.failures * Self.children)
            #expect(tally.instances.value >= Self.failures + Self.children)
            #expect(tally.instances.value <= Self.failures * Self.children + Self.children)
            #expect(refs.allSatisfy { !$0.isStopped })
        }
    }

    @Test func crashStormWithRetryOnceHandlesEveryMessage() async throws {
        try await withTestSystem { system in
            let tally = Tally()
            let supervisor = Supervisor(
                system: system, strategy: .oneForOne(intensity: .unlimited, failingMessage: .retryOnce))
            tally.observe(system, supervisor)
            let refs = try (0..<Self.children).map { index in
                try supervisor.supervise(id: "storm-\(index)") { StormActor(tally: tally, failsOnlyWhenUsed: true) }
            }
            let sent = await Self.storm(refs, tally: tally)

            #expect(tally.handledCount.value == sent.count, "every failing message succeeded on its retry")
            #expect(tally.handledSum.value == sent.sum)
            #expect(tally.deadCount.value == 0)
            #expect(system.deadLetters.total == 0)
            // Every even value fails once, unless it happened to be a child's very first message.
            #expect(tally.restartEvents.value >= Self.failures - Self.children)
            #expect(tally.restartEvents.value <= Self.failures)
        }
    }

    /// The supervisor's API used from many threads while its children fail: supervise,
    /// unsupervise, link, restart and report failures concurrently (for ThreadSanitizer).
    @Test func apiChurnWhileChildrenFail() async throws {
        try await withTestSystem { system in
            let tally = Tally()
            let supervisor = Supervisor(system: system, strategy: .allForOne(intensity: .unlimited))
            tally.observe(system, supervisor)
            let rounds = StressScale.scaled(2_000, minimum: 200)
            let stable = try (0..<2).map { index in
                try supervisor.supervise(id: "stable-\(index)") { StormActor(tally: tally, failsOnlyWhenUsed: false) }
            }
            let sent = AtomicCounter()
            await TestThreads.run(count: 4) { thread in
                for round in 0..<rounds {
                    // Four consecutive rounds work on one id, which all threads share.
                    let id = "churn-\((round / 4) % 8)"
                    switch round % 4 {
                    case 0:
                        if let ref = try? supervisor.supervise(
                            id: id, creation: { StormActor(tally: tally, failsOnlyWhenUsed: false) })
                        {
                            ref.tell(2)  // fails (or is dead-lettered if a sibling already removed it)
                            sent.increment()
                        }
                        try? supervisor.link(id, toParent: "stable-\(thread % 2)")
                    case 1:
                        try? supervisor.restart(id: id)
                        _ = try? supervisor.reportFailure(id: id, error: Boom("reported"))
                    case 2:
                        stable[thread % 2].tell(round * 2 + 1)
                        stable[thread % 2].tell(round * 2)
                        sent.increment(by: 2)
                    default:
                        try? supervisor.unsupervise(id: id)
                    }
                    _ = supervisor.ids
                    _ = supervisor[id, as: Int.self]
                }
            }
            supervisor.stopAll()
            #expect(supervisor.ids.isEmpty)
            await waitUntil(timeout: StressScale.drainTimeout, "stable children stopped") {
                stable.allSatisfy(\.isStopped)
            }
            // Every message is handled or dead-lettered exactly once (failing, or sent to a
            // child already unsupervised: `recipientStopped`).
            await waitUntil(timeout: StressScale.drainTimeout, "every message accounted for") {
                tally.handledCount.value + system.deadLetters.total >= sent.value
            }
            #expect(tally.handledCount.value + system.deadLetters.total == sent.value)
        }
    }
}
