import Synchronization
import Testing
import Troupe
import TroupePubSub
import TroupeTestSupport

/// One publication of the stress and ordering tests.
struct Publication: Sendable, Hashable {
    let publisher: Int
    let sequence: Int
}

/// What a ``Tally`` saw.
struct TallySummary: Sendable, Equatable {
    var count = 0
    var sum = 0
    /// Publications that arrived before an earlier one of the same publisher.
    var outOfOrder = 0
}

/// Counts publications, sums a checksum and checks per-publisher order.
struct Tally: ActorDefinition {
    enum Message: Sendable {
        case publication(Publication)
        case summary(Reply<TallySummary>)
    }

    var summary = TallySummary()
    var lastSequence: [Int: Int] = [:]
    let delivered: AtomicCounter?

    init(delivered: AtomicCounter? = nil) { self.delivered = delivered }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .publication(let publication):
            summary.count += 1
            summary.sum &+= checksum(publication)
            if let last = lastSequence[publication.publisher], last >= publication.sequence { summary.outOfOrder += 1 }
            lastSequence[publication.publisher] = publication.sequence
            delivered?.increment()
        case .summary(let reply):
            reply.succeed(summary)
        }
    }
}

/// A per-publication value whose sum detects lost or duplicated deliveries.
func checksum(_ publication: Publication) -> Int {
    (publication.publisher &* 1_000_003) &+ publication.sequence &* 7 &+ 1
}

/// Stops itself on the payload 0 (so later publications already in its mailbox are
/// dead-lettered).
struct StopsOnZero: ActorDefinition {
    let received: Recorder<Int>
    /// Held on the payload -1, so that later publications queue up.
    let gate: Gate
    mutating func receive(_ message: Int, context: ActorContext<Int>) {
        received.append(message)
        if message == -1 { gate.enter() }
        if message == 0 { context.stop() }
    }
}

/// A system built with the pub/sub plugin, shut down afterwards.
func withPubSubPluginSystem(_ body: (ActorSystem) async throws -> Void) async throws {
    let system = try ActorSystem.build(
        configuration: .init(
            name: "pubsub-plugin", workerCount: 2, pinWorkers: false, askTimeout: .seconds(30), logger: quietLogger
        )
    ) { builder in try builder.plugin(PubSubPlugin()) }
    do {
        try await body(system)
    } catch {
        await system.shutdown()
        throw error
    }
    await system.shutdown()
}
