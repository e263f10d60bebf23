import Testing
@testable import Troupe
import TroupeTestSupport

/// `ActorSystem.recentFailures`: the system's last failures in order, each with its actor, error,
/// decision, time and count, and no more than the limit.
@Suite struct RecentFailureTests {
    @Test func failuresAreKeptInOrderWithTheirActorErrorDecisionAndCount() async throws {
        try await withTestSystem(failureDecider: { _ in .resume }) { system in
            #expect(system.recentFailures.isEmpty)
            let flaky = system.spawn(FailOnDemand(), options: SpawnOptions(name: "flaky"))
            let steady = system.spawn(FailOnDemand(), options: SpawnOptions(name: "steady"))
            for _ in 0..<3 { flaky.tell(.fail) }
            steady.tell(.fail)
            _ = try await flaky.ask { .ping($0) }
            _ = try await steady.ask { .ping($0) }
            let failures = system.recentFailures
            #expect(failures.count == 4)
            let flakyFailures = failures.filter { $0.actor == flaky.address }
            #expect(flakyFailures.map(\.failureCount) == [1, 2, 3])
            #expect(flakyFailures.allSatisfy { $0.action == .resume && $0.error.contains("Failure") })
            #expect(failures.filter { $0.actor == steady.address }.map(\.failureCount) == [1])
            #expect(zip(failures, failures.dropFirst()).allSatisfy { $0.at <= $1.at }, "in the order they happened")
            let described = flakyFailures.first?.description ?? ""
            #expect(described.hasPrefix("\(flaky.address) failed (resume) at "), "\(described)")
        }
    }

    /// Two workers can read the clock in one order and take the list's lock in the other: a
    /// failure recorded after a later one still goes in its place.
    @Test func aFailureRecordedAfterALaterOneGoesInItsPlace() async throws {
        try await withTestSystem { system in
            let actor = system.spawn(FailOnDemand())
            func failure(at milliseconds: Int, count: Int) -> RecentFailure {
                RecentFailure(
                    actor: actor.address, error: "e\(count)", action: .resume, at: .milliseconds(milliseconds),
                    failureCount: count)
            }
            for (milliseconds, count) in [(10, 1), (30, 3), (40, 4), (20, 2), (5, 0), (40, 5)] {
                system.introspector.record(failure(at: milliseconds, count: count))
            }
            #expect(system.recentFailures.map(\.failureCount) == [0, 1, 2, 3, 4, 5])
            // Full: one older than all that are kept is the one that goes.
            for count in 6..<(ActorSystem.recentFailureLimit + 1) {
                system.introspector.record(failure(at: 100 + count, count: count))
            }
            #expect(system.recentFailures.first?.failureCount == 1)
            system.introspector.record(failure(at: 1, count: -1))
            #expect(system.recentFailures.count == ActorSystem.recentFailureLimit)
            #expect(system.recentFailures.first?.failureCount == 1, "the oldest went: the late one itself")
        }
    }

    @Test func theOldestGoBeyondTheLimit() async throws {
        try await withTestSystem(failureDecider: { _ in .resume }) { system in
            let actor = system.spawn(FailOnDemand())
            let total = ActorSystem.recentFailureLimit + 6
            for _ in 0..<total { actor.tell(.fail) }
            _ = try await actor.ask { .ping($0) }
            let failures = system.recentFailures
            #expect(failures.count == ActorSystem.recentFailureLimit)
            #expect(failures.first?.failureCount == 7, "the six oldest went")
            #expect(failures.last?.failureCount == total)
        }
    }
}
