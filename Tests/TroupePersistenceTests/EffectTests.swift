import Testing
import Troupe
import TroupePersistence
import TroupeTestSupport

/// An event-sourced actor whose commands chain follow-ups, each logging the state it saw.
struct Tally: EventSourcedActor {
    enum Command: Sendable {
        /// Adds `amount`; then a run, the reply and another run, in that order.
        case add(Int, tag: String, log: Recorder<String>, Reply<Int>)
        /// No events: the same chain runs at once.
        case look(tag: String, log: Recorder<String>, Reply<Int>)
        /// Adds 1, with `count` runs chained after it, each logging its number.
        case addWithRuns(count: Int, log: Recorder<String>, Reply<Int>)
        case total(Reply<Int>)
    }
    enum Event: Codable, Sendable { case added(Int) }

    let persistenceID: PersistenceID
    var emptyState: Int { 0 }
    static let eventCodec = PersistenceCodec<Event>.json(typeName: "tally-event")

    func handle(_ command: Command, state: Int, context: EventSourcedContext<Self>) -> Effect<Self> {
        switch command {
        case .add(let amount, let tag, let log, let reply):
            Self.chain(.persist(.added(amount)), tag: tag, log: log, reply: reply)
        case .look(let tag, let log, let reply):
            Self.chain(.none, tag: tag, log: log, reply: reply)
        case .addWithRuns(let count, let log, let reply):
            Self.withRuns(count: count, log: log).thenReply(reply) { $0 }
        case .total(let reply):
            .reply(reply, state)
        }
    }

    static func withRuns(count: Int, log: Recorder<String>) -> Effect<Self> {
        var effect = Effect<Self>.persist(.added(1))
        for number in 0..<count { effect = effect.thenRun { _ in log.append("\(number)") } }
        return effect
    }

    static func chain(_ effect: Effect<Self>, tag: String, log: Recorder<String>, reply: Reply<Int>) -> Effect<Self> {
        effect
            .thenRun { log.append("\(tag) run 1 saw \($0)") }
            .thenReply(reply) { state in
                log.append("\(tag) reply saw \(state)")
                return state
            }
            .thenRun { log.append("\(tag) run 2 saw \($0)") }
    }

    func apply(_ event: Event, to state: inout Int) {
        if case .added(let amount) = event { state += amount }
    }
}

/// A durable-state actor with the same chain of follow-ups.
struct StateTally: DurableStateActor {
    enum Command: Sendable {
        case add(Int, tag: String, log: Recorder<String>, Reply<Int>)
    }
    let persistenceID: PersistenceID
    var emptyState: Int { 0 }
    static let stateCodec = PersistenceCodec<Int>.json(typeName: "state-tally")

    func handle(_ command: Command, state: Int, context: DurableStateContext<Self>) -> StateEffect<Self> {
        switch command {
        case .add(let amount, let tag, let log, let reply):
            .save(state + amount)
                .thenRun { log.append("\(tag) run 1 saw \($0)") }
                .thenReply(reply) { state in
                    log.append("\(tag) reply saw \(state)")
                    return state
                }
                .thenRun { log.append("\(tag) run 2 saw \($0)") }
        }
    }
}

/// An effect's follow-ups: run in the order given, each with the state right after its own
/// command's events (also when several commands share one write), none when the write fails.
@Suite struct EffectTests {
    @Test(arguments: StoreKind.available) func followUpsRunInTheOrderGivenWithTheStateAfterTheirOwnEvents(
        kind: StoreKind
    ) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let tally = system.spawn(persistent: Tally(persistenceID: "tally-1"), journal: journal)
            let log = Recorder<String>()
            // Sent at once: the later commands arrive during the first write and may share the next.
            let replies = Recorder<Int>()
            for (tag, amount) in [("a", 2), ("b", 3), ("c", 4)] {
                tally.actorRef.ask({ .command(.add(amount, tag: tag, log: log, $0)) }) { result in
                    if case .success(let total) = result { replies.append(total) }
                }
            }
            #expect(try await tally.ask { .look(tag: "d", log: log, $0) } == 9)
            // d's last follow-up runs after its reply: one more command to be sure it ran.
            #expect(try await tally.ask { .look(tag: "e", log: log, $0) } == 9)
            #expect(
                Array(log.values.prefix(12)) == [
                    "a run 1 saw 2", "a reply saw 2", "a run 2 saw 2",
                    "b run 1 saw 5", "b reply saw 5", "b run 2 saw 5",
                    "c run 1 saw 9", "c reply saw 9", "c run 2 saw 9",
                    "d run 1 saw 9", "d reply saw 9", "d run 2 saw 9",
                ])
            #expect(replies.values.sorted() == [2, 5, 9])
        }
    }

    @Test func manyFollowUpsAndManyCommandsInOneWriteRunInOrder() async throws {
        try await withDurableRig(.memory) { system, journal, store async throws in
            let tally = system.spawn(persistent: Tally(persistenceID: "tally-3"), journal: journal)
            let log = Recorder<String>()
            // One command with 2,000 follow-ups.
            #expect(try await tally.ask { .addWithRuns(count: 2_000, log: log, $0) } == 1)
            #expect(log.values == (0..<2_000).map { "\($0)" })
            // 3,000 commands without events right behind two with: those decided while a write
            // is in flight join the next one (thousands of follow-ups in one pending write).
            let looks = Recorder<String>()
            let replies = Recorder<Int>()
            tally.actorRef.ask({ .command(.add(1, tag: "first", log: looks, $0)) }, onReply: { _ in })
            tally.actorRef.ask({ .command(.add(1, tag: "second", log: looks, $0)) }, onReply: { _ in })
            for number in 0..<3_000 {
                tally.actorRef.ask({ .command(.look(tag: "\(number)", log: looks, $0)) }) { result in
                    if case .success(let total) = result { replies.append(total) }
                }
            }
            #expect(try await tally.ask { .total($0) } == 3)
            #expect(replies.values.count == 3_000 && replies.values.allSatisfy { $0 == 3 })
            let replied = looks.values.filter { $0.contains(" reply ") }
            #expect(replied == ["first reply saw 2", "second reply saw 3"] + (0..<3_000).map { "\($0) reply saw 3" })
        }
    }

    @Test func aFailedWriteRunsNoneOfItsFollowUpsAndFailsTheReply() async throws {
        try await withDurableRig(.memory) { system, journal, store async throws in
            let first = system.spawn(persistent: Tally(persistenceID: "tally-2"), journal: journal)
            let log = Recorder<String>()
            #expect(try await first.ask { .add(1, tag: "a", log: log, $0) } == 1)
            let second = system.spawn(persistent: Tally(persistenceID: "tally-2"), journal: journal)
            #expect(try await second.ask { .look(tag: "b", log: log, $0) } == 1)  // holds the newer epoch
            let refused = await askFailure { try await first.ask { .add(5, tag: "c", log: log, $0) } }
            guard case .fenced = refused?.rootCause as? PersistenceError else {
                Issue.record("expected a fenced PersistenceError, got \(String(describing: refused))")
                return
            }
            _ = await first.terminated()
            #expect(!log.values.contains { $0.hasPrefix("c ") }, "a refused write ran follow-ups: \(log.values)")
        }
    }

    @Test(arguments: StoreKind.available) func aDurableStateSavesFollowUpsRunInOrder(kind: StoreKind) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let tally = system.spawn(persistent: StateTally(persistenceID: "state-tally-1"), journal: journal)
            let log = Recorder<String>()
            #expect(try await tally.ask { .add(2, tag: "a", log: log, $0) } == 2)
            #expect(try await tally.ask { .add(3, tag: "b", log: log, $0) } == 5)
            // The second ask was answered after the first command's last follow-up ran.
            #expect(
                Array(log.values.prefix(4)) == ["a run 1 saw 2", "a reply saw 2", "a run 2 saw 2", "b run 1 saw 5"])
            #expect(log.values.contains("b reply saw 5"))
        }
    }
}
