#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// A bounded mailbox holds at most `capacity` user messages at every moment, whatever the
/// overflow policy: two producers send 10^6 messages (scaled) to a capacity-16 mailbox whose
/// consumer is blocked. Checked: the depth never exceeds the capacity (after every send, and
/// by a sampling thread), every message beyond the capacity is a dead letter counted before
/// its `tell` returned, the process's resident memory stays flat, and once the consumer runs,
/// delivered + dead-lettered == sent, in per-sender order.
@Suite(.serialized) struct BoundedMailboxStressTests {
    static let capacity = 16

    @Test(arguments: [MailboxOverflowPolicy.dropNewest, .dropOldest, .fail])
    func aBlockedBoundedMailboxNeverHoldsMoreThanItsCapacity(policy: MailboxOverflowPolicy) async throws {
        let total = StressScale.scaled(1_000_000, minimum: 10_000)
        let producers = 2
        let perProducer = total / producers
        let sent = perProducer * producers
        try await withTestSystem(workers: 2) { system in
            let gate = Gate(safetyTimeout: .seconds(600))
            let received = Recorder<Int>()
            let consumer = system.spawn(
                Probe<Int>(received: received, gate: gate, holdWhen: { $0 == -1 }),
                options: SpawnOptions(mailbox: .bounded(capacity: Self.capacity, overflow: policy)))
            consumer.tell(-1)
            await waitUntil("the consumer is blocked") { gate.entered == 1 }

            let done = Atomic<Bool>(false)
            let sampledMaximum = Atomic<Int>(0)
            let sampler = TestThreads.start {
                while !done.load(ordering: .acquiring) {
                    let depth = consumer.mailboxDepth ?? 0
                    if depth > sampledMaximum.load(ordering: .relaxed) {
                        sampledMaximum.store(depth, ordering: .relaxed)
                    }
                }
            }
            let maximumAfterSend = Atomic<Int>(0)
            let refusedOrDropping = Atomic<Int>(0)
            await TestThreads.run(count: producers) { producer in
                var localMaximum = 0
                var flagged = 0
                for sequence in 0..<perProducer {
                    let outcome = consumer.tell(producer << 32 | sequence)
                    if outcome != .enqueued { flagged += 1 }
                    localMaximum = max(localMaximum, consumer.mailboxDepth ?? 0)
                }
                refusedOrDropping.add(flagged, ordering: .relaxed)
                var current = maximumAfterSend.load(ordering: .relaxed)
                while localMaximum > current {
                    let (exchanged, now) = maximumAfterSend.compareExchange(
                        expected: current, desired: localMaximum, ordering: .relaxed)
                    if exchanged { break }
                    current = now
                }
            }
            done.store(true, ordering: .releasing)
            TestThreads.join(sampler)

            // Every message beyond the capacity is already a counted dead letter.
            let deadLetters = system.deadLetters.count(.mailboxFull)
            #expect(deadLetters == sent - Self.capacity, "\(policy): dead letters counted before tell returned")
            let flagged = refusedOrDropping.load(ordering: .relaxed)
            if policy == .dropOldest {
                // Each drop is reported by the send that made it; with two producers racing for
                // the freed slot one send may drop more than one.
                #expect(flagged > 0 && flagged <= deadLetters, "\(policy): senders were told about the drops")
            } else {
                #expect(flagged == deadLetters, "\(policy): every refused send was told")
            }
            #expect(maximumAfterSend.load(ordering: .relaxed) <= Self.capacity, "\(policy): depth seen by the senders")
            #expect(sampledMaximum.load(ordering: .relaxed) <= Self.capacity, "\(policy): depth seen by the sampler")
            #expect(consumer.mailboxDepth == Self.capacity)

            gate.open()
            await waitUntil(timeout: StressScale.drainTimeout, "drained") { received.count == 1 + Self.capacity }
            let delivered = received.values.dropFirst()
            #expect(
                delivered.count + system.deadLetters.count(.mailboxFull) == sent,
                "\(policy): delivered + dead-lettered == sent")
            for producer in 0..<producers {
                let sequences = delivered.filter { $0 >> 32 == producer }.map { $0 & 0xFFFF_FFFF }
                #expect(sequences == sequences.sorted(), "\(policy): per-sender FIFO")
            }
            if policy == .dropOldest {
                // The survivors are the newest: of each producer, a run that ends with its last message.
                for producer in 0..<producers {
                    let sequences = delivered.filter { $0 >> 32 == producer }.map { $0 & 0xFFFF_FFFF }
                    #expect(
                        sequences == Array((perProducer - sequences.count)..<perProducer),
                        "drop-oldest keeps the newest messages")
                }
            } else {
                // The survivors are the first `capacity` messages sent.
                #expect(delivered.count == Self.capacity)
            }
        }
    }

    /// Resident memory, measured in a child process of its own (an exit test) so that other
    /// tests running in parallel cannot blur it: 10^6 messages sent to a blocked capacity-16
    /// mailbox, for each policy, may not grow the process by more than 4 MB (unbounded, the
    /// envelopes alone would take ≥ 48 MB).
    @Test func residentMemoryStaysFlatWhileABlockedBoundedMailboxIsFlooded() async throws {
        if StressScale.isThreadSanitized { return }  // TSan's shadow memory makes RSS meaningless
        await #expect(processExitsWith: .success) {
            for policy in [MailboxOverflowPolicy.dropNewest, .dropOldest, .fail] {
                let system = ActorSystem(configuration: .init(workerCount: 2, pinWorkers: false))
                let gate = Gate(safetyTimeout: .seconds(600))
                let consumer = system.spawn(
                    Probe<Int>(gate: gate, holdWhen: { $0 == -1 }),
                    options: SpawnOptions(mailbox: .bounded(capacity: 16, overflow: policy)))
                consumer.tell(-1)
                while gate.entered == 0 { usleep(100) }
                // Warm the envelope pools and the dead-letter path first.
                for value in 0..<10_000 { consumer.tell(value) }
                let before = BoundedMailboxStressTests.residentBytes()
                for value in 0..<1_000_000 { consumer.tell(value) }
                let growth = BoundedMailboxStressTests.residentBytes() - before
                if growth > 4 << 20 {
                    FileHandle.standardError.write(Data("\(policy): resident memory grew by \(growth) bytes\n".utf8))
                    exit(1)
                }
                gate.open()
                system.shutdownBlocking()
            }
            exit(0)
        }
    }

    static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes * 1024
    }
}
