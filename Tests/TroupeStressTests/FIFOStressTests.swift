#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// (1) Many producer threads, many actors, `StressScale.messages` messages in total (10^7 by
/// default): zero lost, zero duplicated, zero per-sender FIFO violations.
extension StressTests {
    struct Item: Sendable {
        let producer: Int32
        let sequence: UInt32
    }

    enum FIFOMessage: Sendable {
        case item(Item)
        case report(Reply<FIFOReport>)
    }

    struct FIFOReport: Sendable {
        var counts: [Int]
        var checksums: [UInt64]
        var violations: Int
    }

    static func mix(_ producer: Int, _ sequence: UInt32) -> UInt64 {
        (UInt64(sequence) &+ 1) &* 0x9E37_79B9_7F4A_7C15 ^ (UInt64(producer) &* 0xD6E8_FEB8_6659_FD93)
    }

    /// Checks strictly increasing sequence numbers per producer and sums what it saw.
    struct FIFOChecker: ActorDefinition {
        var last: [Int64]
        var report: FIFOReport

        init(producers: Int) {
            last = Array(repeating: -1, count: producers)
            report = FIFOReport(
                counts: Array(repeating: 0, count: producers),
                checksums: Array(repeating: 0, count: producers), violations: 0)
        }

        mutating func receive(_ message: FIFOMessage, context: ActorContext<FIFOMessage>) {
            switch message {
            case .item(let item):
                let producer = Int(item.producer)
                let sequence = Int64(item.sequence)
                if sequence <= last[producer] { report.violations += 1 }
                last[producer] = sequence
                report.counts[producer] += 1
                report.checksums[producer] &+= StressTests.mix(producer, item.sequence)
            case .report(let reply):
                reply.succeed(report)
            }
        }
    }

    @Test(.timeLimit(.minutes(30)))
    func manyProducersManyActorsNoLossNoDuplicatesPerSenderFIFO() async throws {
        let producers = 8
        let actorCount = 16
        let total = StressScale.messages
        let perProducer = total / producers
        precondition(perProducer < Int(UInt32.max), "TROUPE_STRESS_MESSAGES too large for 32-bit sequence numbers")
        let system = makeTestSystem(name: "fifo", workers: 2, batchSize: 64)
        let actors = (0..<actorCount).map { _ in
            system.spawn(FIFOChecker(producers: producers), options: SpawnOptions(tracksMailboxDepth: true))
        }
        let expectedChecksums = TestLock<[UInt64]>(Array(repeating: 0, count: producers))
        let expectedCounts = TestLock<[Int]>(Array(repeating: 0, count: producers))
        let notEnqueued = AtomicCounter()
        let clock = ContinuousClock()
        let start = clock.now

        await TestThreads.run(count: producers) { producer in
            var checksum: UInt64 = 0
            var refused = 0
            // Each producer walks the actors in its own order, so every actor gets interleaved
            // traffic from every producer.
            let stride = 1 + 2 * (producer % (actorCount / 2))
            var target = producer % actorCount
            for sequence in 0..<UInt32(perProducer) {
                let actor = actors[target]
                if sequence & 255 == 0 {
                    // Backpressure keeps memory bounded: wait while this actor is far behind.
                    while (actor.mailboxDepth ?? 0) > 20_000 { sched_yield() }
                }
                if actor.tell(.item(Item(producer: Int32(producer), sequence: sequence))) != .enqueued { refused += 1 }
                checksum &+= StressTests.mix(producer, sequence)
                target = (target + stride) % actorCount
            }
            expectedChecksums.withLock { $0[producer] = checksum }
            expectedCounts.withLock { $0[producer] = perProducer }
            notEnqueued.increment(by: refused)
        }
        let sendTime = clock.now - start

        // Each report request is enqueued after every item (the producers are done), so the
        // report covers all of them.
        var counts = Array(repeating: 0, count: producers)
        var checksums = Array(repeating: UInt64(0), count: producers)
        var violations = 0
        for actor in actors {
            let report = try await actor.ask(timeout: StressScale.drainTimeout) { FIFOMessage.report($0) }
            for producer in 0..<producers {
                counts[producer] += report.counts[producer]
                checksums[producer] &+= report.checksums[producer]
            }
            violations += report.violations
        }
        let totalTime = clock.now - start
        await system.shutdown()

        print(
            "FIFO stress: \(producers * perProducer) messages, \(producers) producers, \(actorCount) actors; sent in \(sendTime), all handled in \(totalTime)"
        )
        #expect(notEnqueued.value == 0, "every tell was enqueued")
        #expect(violations == 0, "per-sender FIFO violations")
        #expect(
            counts == expectedCounts.withLock { $0 }, "handled per producer (lost or duplicated messages otherwise)")
        #expect(checksums == expectedChecksums.withLock { $0 }, "checksum per producer")
        #expect(counts.reduce(0, +) == producers * perProducer)
        #expect(system.deadLetters.total == 0, "dead letters: \(system.deadLetters.summary)")
    }
}
