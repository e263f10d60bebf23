import Testing
import TroupeTestSupport
import TroupeVirtualActors

@testable import Troupe

private struct Echo: ActorDefinition {
    enum Message: Sendable { case ping(Reply<Int>) }
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .ping(let reply): reply.succeed(1)
        }
    }
}

/// The first ask of an identity from a task on the system's task executor activates it and is
/// answered in place (the core's direct hand-off of a newborn's first ask): the activation's
/// `started` and the ask run on the asking thread, and the asking task does not suspend.
@Suite struct ActivationHandOffTests {
    @Test func theFirstAskOfANewIdentityFromATaskOnTheExecutorRunsInPlace() async throws {
        // One worker: no other worker can take the activation's first turn first.
        try await withTestSystem(workers: 1) { system in
            let region = try EntityRegion(
                system: system, kind: EntityKind<Echo>("echo", idleTimeout: nil) { _ in Echo() })
            let before = system.scheduler.handOffTurns
            let answers = try await Task(executorPreference: system.taskExecutor) {
                var answers = 0
                for index in 0..<20 { answers += try await region.entity("key-\(index)").ask { .ping($0) } }
                return answers
            }.value
            #expect(answers == 20)
            #expect(region.statistics.active == 20)
            #expect(system.scheduler.handOffTurns - before == 20)
        }
    }
}
