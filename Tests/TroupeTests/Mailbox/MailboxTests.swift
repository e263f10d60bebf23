import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Mailboxes and envelopes: order, payload integrity for every envelope size class, payload
/// ownership (each payload destroyed exactly once, whether handled or dead-lettered), depth.
@Suite struct MailboxTests {
    @Test func singleSenderMessagesArriveInSendOrder() async throws {
        try await withTestSystem { system in
            let received = Recorder<Int>()
            let probe = system.spawn(Probe<Int>(received: received))
            let count = 20_000
            for value in 0..<count { #expect(probe.tell(value) == .enqueued) }
            await waitUntil("all \(count) messages handled") { received.count == count }
            #expect(received.values == Array(0..<count))
        }
    }

    @Test func mailboxDepthCountsQueuedMessagesWhileTheActorIsBusy() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let received = Recorder<Int>()
            let probe = system.spawn(
                Probe<Int>(received: received, gate: gate, holdWhen: { $0 == 0 }),
                options: SpawnOptions(tracksMailboxDepth: true))
            #expect(probe.mailboxDepth == 0)
            probe.tell(0)
            await waitUntil("handler holds message 0") { gate.entered == 1 }
            // Message 0 has left the mailbox; everything sent now waits behind it.
            for value in 1...10 { probe.tell(value) }
            #expect(probe.mailboxDepth == 10)
            #expect(!probe.isMailboxEmpty)
            gate.open()
            await waitUntil("the mailbox drains") { received.count == 11 }
            await waitUntil("depth returns to 0") { probe.mailboxDepth == 0 }
            #expect(probe.isMailboxEmpty)
            #expect(received.values == Array(0...10))
        }
    }

    // Payloads from a few bytes to beyond the pooled envelope sizes (2048 bytes) all arrive
    // intact: each class of the envelope allocator, plus the malloc path.
    @Test(arguments: [0, 1, 8, 24, 100, 250, 500, 1000, 2040, 2048, 2100, 6000])
    func payloadsOfEverySizeArriveIntact(byteCount: Int) async throws {
        try await withTestSystem { system in
            let sums = Recorder<UInt64>()
            let actor = system.spawn(ChecksumActor(sums: sums))
            var expected: [UInt64] = []
            for seed in 0..<300 {
                let payload = Blob(seed: UInt64(seed), byteCount: byteCount)
                expected.append(payload.checksum)
                actor.tell(payload)
            }
            await waitUntil("all blobs handled") { sums.count == expected.count }
            #expect(sums.values == expected)
        }
    }

    @Test func fixedSizeLargeValuePayloadsArriveIntact() async throws {
        // 3 KiB stored inline in the envelope (not behind an array buffer): the unpooled path.
        try await withTestSystem { system in
            let sums = Recorder<UInt64>()
            let actor = system.spawn(InlineChecksumActor(sums: sums))
            for seed in 0..<200 {
                actor.tell(InlineBlob(repeating: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15))
            }
            await waitUntil("all inline blobs handled") { sums.count == 200 }
            let expected = (0..<200).map { seed in
                InlineBlob(repeating: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15).checksum
            }
            #expect(sums.values == expected)
        }
    }

    @Test func everyPayloadIsDestroyedExactlyOnceWhetherHandledOrDeadLettered() async throws {
        let live = AtomicCounter()
        let created = AtomicCounter()
        do {
            let system = makeTestSystem()
            let gate = Gate()
            let handled = AtomicCounter()
            let actor = system.spawn(TrackedSink(gate: gate, handled: handled))
            var enqueued = 0
            // 0: held at the gate; 1...99 queue; "stop" is message 50: the rest is dead-lettered.
            for index in 0..<100 {
                let outcome = actor.tell(.payload(Tracked(live: live, created: created), stop: index == 50))
                if outcome.isEnqueued { enqueued += 1 }
            }
            await waitUntil("first payload held") { gate.entered == 1 }
            gate.open()
            await waitUntil("the actor stops after message 50") { actor.isStopped }
            await waitUntil("every message handled or dead-lettered") {
                handled.value + system.deadLetters.total == 100
            }
            #expect(enqueued == 100)
            #expect(handled.value == 51)
            #expect(system.deadLetters.count(.recipientStopped) == 49)
            // Sent after the stop: rejected at the sender, still destroyed.
            #expect(
                actor.tell(.payload(Tracked(live: live, created: created), stop: false))
                    == .deadLettered(.recipientStopped))
            await system.shutdown()
        }
        #expect(created.value == 101)
        await waitUntil("every payload destroyed") { live.value == 0 }
    }

    @Test func depthIsZeroForAFreshAndForAStoppedActor() async throws {
        try await withTestSystem { system in
            let received = Recorder<Int>()
            let probe = system.spawn(Probe<Int>(received: received), options: SpawnOptions(tracksMailboxDepth: true))
            #expect(probe.mailboxDepth == 0)
            for value in 0..<100 { probe.tell(value) }
            probe.stop()
            await waitUntil("stopped") { probe.isStopped }
            await waitUntil("drained") { probe.mailboxDepth == 0 }
            #expect(probe.isMailboxEmpty)
            #expect(received.values == Array(0..<100))
        }
    }

    @Test func depthIsUnknownUnlessTrackedButBoundedMailboxesAlwaysTrackIt() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let untracked = system.spawn(Probe<Int>(gate: gate, holdWhen: { $0 == 0 }))
            #expect(untracked.mailboxDepth == nil)
            untracked.tell(0)
            await waitUntil("held") { gate.entered == 1 }
            untracked.tell(1)
            #expect(untracked.mailboxDepth == nil)
            #expect(!untracked.isMailboxEmpty, "emptiness is always known")
            let bounded = system.spawn(
                Probe<Int>(), options: SpawnOptions(mailbox: .bounded(capacity: 8, overflow: .fail)))
            #expect(bounded.mailboxDepth == 0)
            gate.open()
            await waitUntil("untracked mailbox drains") { untracked.isMailboxEmpty }
        }
    }
}

// MARK: - Test actors

/// A payload whose size is chosen at run time: `byteCount` bytes behind an array, plus the
/// inline header.
struct Blob: Sendable {
    let seed: UInt64
    let bytes: [UInt8]

    init(seed: UInt64, byteCount: Int) {
        self.seed = seed
        var generator = seed &+ 1
        bytes = (0..<byteCount).map { _ in
            generator = generator &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: generator >> 33)
        }
    }

    var checksum: UInt64 {
        bytes.reduce(seed &* 31) { ($0 &* 131) &+ UInt64($1) }
    }
}

struct ChecksumActor: ActorDefinition {
    let sums: Recorder<UInt64>
    mutating func receive(_ message: Blob, context: ActorContext<Blob>) { sums.append(message.checksum) }
}

/// 3 KiB inline: larger than the largest pooled envelope.
struct InlineBlob: Sendable {
    var words: InlineArray<384, UInt64>

    init(repeating seed: UInt64) {
        words = InlineArray(repeating: 0)
        for index in words.indices { words[index] = seed &+ UInt64(index) &* 0x100_0000_01B3 }
    }

    var checksum: UInt64 {
        var sum: UInt64 = 0
        for index in words.indices { sum = (sum &* 1_000_003) ^ words[index] }
        return sum
    }
}

struct InlineChecksumActor: ActorDefinition {
    let sums: Recorder<UInt64>
    mutating func receive(_ message: InlineBlob, context: ActorContext<InlineBlob>) { sums.append(message.checksum) }
}

/// Counts live instances, to prove payloads are released exactly once.
final class Tracked: Sendable {
    let live: AtomicCounter
    init(live: AtomicCounter, created: AtomicCounter) {
        self.live = live
        live.increment()
        created.increment()
    }
    deinit { live.increment(by: -1) }
}

struct TrackedSink: ActorDefinition {
    enum Message: Sendable { case payload(Tracked, stop: Bool) }
    let gate: Gate
    let handled: AtomicCounter
    var first = true

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        handled.increment()
        if first {
            first = false
            gate.enter()
        }
        if case .payload(_, stop: true) = message { context.stop() }
    }
}
