import CTroupe
import Testing
import TroupeTestSupport

@testable import Troupe

/// The envelope allocator and the header layout that the inlinable turn relies on.
@Suite struct EnvelopeTests {
    /// The turn is compiled in the user's module, which cannot see CTroupe, so it reads the
    /// header at offsets written in Swift (`EnvelopeLayout`); they must be the C layout's.
    @Test func theInlinableTurnReadsTheHeaderAtTheCOffsets() {
        #expect(MemoryLayout<CTroupe_envelope>.offset(of: \.kind) == EnvelopeLayout.kindOffset)
        #expect(MemoryLayout<CTroupe_envelope>.offset(of: \.ask_token) == EnvelopeLayout.askTokenOffset)
        #expect(MemoryLayout<CTroupe_envelope>.offset(of: \.side) == EnvelopeLayout.sideWordOffset)
        #expect(Int(CTroupe_envelope_payload_offset) == EnvelopeLayout.payloadOffset)
        #expect(UInt32(CTroupe_envelope_kind_user) == EnvelopeLayout.userKind)
    }

    /// Classes of 64, 128, 256, 512, 1024 and 2080 bytes, header (32 bytes) included; larger
    /// payloads are allocated on their own (class 0xff).
    @Test(
        arguments: [
            (0, 0), (32, 0), (33, 1), (96, 1), (97, 2), (224, 2), (225, 3), (480, 3), (481, 4), (992, 4),
            (993, 5), (2048, 5), (2049, 0xff), (10_000, 0xff),
        ] as [(Int, UInt32)])
    func aPayloadGetsTheSmallestClassThatHoldsIt(payloadSize: Int, sizeClass: UInt32) {
        let envelope = CTroupe_envelope_alloc(payloadSize)!
        #expect(envelope.pointee.size_class == sizeClass)
        CTroupe_envelope_free(envelope)
    }

    /// A burst that finds no free envelope (a flood into an unbounded mailbox) carves slabs
    /// that double from 16 KiB to 1 MiB: one malloc per slab, not one per envelope. On a new
    /// thread, whose lists are empty.
    @Test func aBurstOfEnvelopesCostsOneMallocPerSlabNotOnePerEnvelope() async {
        let count = 4096
        let (mallocs, distinct, aligned) = await TestThreads.onNewThread { () -> (UInt64, Int, Bool) in
            let before = CTroupe_envelope_thread_fresh_allocations()
            // 600-byte payloads: the 1024-byte class, 16, 32, …, 1,024 envelopes per slab.
            let envelopes = (0..<count).map { _ in CTroupe_envelope_alloc(600)! }
            let mallocs = CTroupe_envelope_thread_fresh_allocations() - before
            let addresses = Set(envelopes.map { UInt(bitPattern: $0) })
            let aligned = envelopes.allSatisfy { UInt(bitPattern: $0) % 16 == 0 }
            for envelope in envelopes { CTroupe_envelope_free(envelope) }
            return (mallocs, addresses.count, aligned)
        }
        #expect(distinct == count, "every envelope of the burst is a different one")
        #expect(aligned, "payloads stay 16-byte aligned")
        // 10 slabs at most (16 + 32 + … + 1,024 + 3 × 1,024 ≥ 4,096; fewer when batches freed
        // by other tests' threads are reused). This thread's count only.
        #expect(mallocs <= 10, "\(mallocs) mallocs for \(count) envelopes")
    }
}
