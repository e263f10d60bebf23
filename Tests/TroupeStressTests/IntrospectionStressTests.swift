import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Introspection and context propagation under load: many producers, every message sampled and
/// carrying its producer's context, snapshots taken the whole time and the watchdog looking at
/// the workers. Nothing is lost, duplicated or reordered per sender, every handler sees its
/// sender's context, and every carried context is released (LeakSanitizer would report one).
extension StressTests {
    enum ProducerContext {
        @TaskLocal static var producer: Int?
    }

    /// Carries `ProducerContext.producer` with each message.
    struct ProducerPropagation: MessageContextPropagation {
        func captureContext() -> (any Sendable)? { ProducerContext.producer }
        func withContext(_ context: any Sendable, delivery: MessageDelivery, _ handler: () -> Void) {
            ProducerContext.$producer.withValue(context as? Int) { handler() }
        }
    }

    struct ContextChecker: ActorDefinition {
        var inner: FIFOChecker
        var wrongContexts = 0

        mutating func receive(_ message: FIFOMessage, context: ActorContext<FIFOMessage>) {
            switch message {
            case .item(let item):
                if ProducerContext.producer != Int(item.producer) { wrongContexts += 1 }
                inner.receive(message, context: context)
            case .report(let reply):
                var report = inner.report
                report.violations += wrongContexts
                reply.succeed(report)
            }
        }
    }

    @Test(.timeLimit(.minutes(20)))
    func sampledMessagesCarryingContextsUnderSnapshotsLoseNothing() async throws {
        let producers = 4
        let actorCount = 8
        let perProducer = max(10_000, StressScale.messages / 20 / producers)
        let system = ActorSystem(
            configuration: .init(
                name: "introspection-stress", workerCount: 2, pinWorkers: false, logger: quietLogger,
                introspection: .init(
                    samplingInterval: 1, perActorHistograms: true, stuckHandlerThreshold: .milliseconds(20),
                    tracksMailboxDepths: true),
                contextPropagation: ProducerPropagation()))
        let actors = (0..<actorCount).map { index in
            system.spawn(
                ContextChecker(inner: FIFOChecker(producers: producers)), options: SpawnOptions(name: "c\(index)"))
        }
        let done = Atomic<Bool>(false)
        let snapshots = Atomic<Int>(0)
        let observer = TestThreads.start {
            while !done.load(ordering: .acquiring) {
                let snapshot = system.snapshot()
                precondition(snapshot.actors.count == actorCount)
                _ = "\(snapshot)"
                snapshots.add(1, ordering: .relaxed)
            }
        }
        await TestThreads.run(count: producers) { producer in
            ProducerContext.$producer.withValue(producer) {
                for sequence in 0..<perProducer {
                    let item = Item(producer: Int32(producer), sequence: UInt32(sequence))
                    actors[sequence % actorCount].tell(.item(item))
                }
            }
        }
        var totalCounts = Array(repeating: 0, count: producers)
        var totalChecksums = Array(repeating: UInt64(0), count: producers)
        var violations = 0
        for actor in actors {
            let report = try await actor.ask { .report($0) }
            violations += report.violations
            for producer in 0..<producers {
                totalCounts[producer] += report.counts[producer]
                totalChecksums[producer] &+= report.checksums[producer]
            }
        }
        done.store(true, ordering: .releasing)
        TestThreads.join(observer)
        let snapshot = system.snapshot()
        await system.shutdown()

        #expect(violations == 0, "per-sender FIFO held and every handler saw its sender's context")
        for producer in 0..<producers {
            #expect(totalCounts[producer] == perProducer)
            var expected: UInt64 = 0
            for sequence in 0..<perProducer { expected &+= StressTests.mix(producer, UInt32(sequence)) }
            #expect(totalChecksums[producer] == expected)
        }
        #expect(snapshots.load(ordering: .relaxed) > 0)
        let handled = snapshot.actors.reduce(UInt64(0)) { $0 + $1.messagesProcessed }
        #expect(handled >= UInt64(producers * perProducer), "every message counted by its mailbox")
        #expect(snapshot.handlerDuration.count > 0)
        #expect(snapshot.actors.allSatisfy { $0.handlerDuration != nil })
    }
}
