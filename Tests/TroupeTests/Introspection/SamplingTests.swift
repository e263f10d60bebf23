import CTroupe
import Testing
import TroupeTestSupport

@testable import Troupe

/// The envelope allocator stamps one envelope per sampling interval, at the smallest interval
/// any system asked for. Serialized: the interval is process-wide.
@Suite(.serialized) struct SamplingTests {
    /// Other suites' systems sample at 1,024 (the default) or 1 meanwhile, so this checks what
    /// holds whatever they do: the smallest interval wins, and an ended request stops counting.
    @Test func theProcessSamplesAtTheSmallestIntervalAskedForAndForgetsEndedRequests() {
        CTroupe_sampling_begin(64)
        CTroupe_sampling_begin(6)  // rounded up to 8
        #expect(CTroupe_sampling_interval() <= 8)
        #expect(CTroupe_sampling_interval() != 6, "intervals are powers of two")
        CTroupe_sampling_end(6)
        #expect(CTroupe_sampling_interval() != 8, "the ended request no longer counts")
        #expect(CTroupe_sampling_interval() <= 64)
        CTroupe_sampling_end(64)
        #expect(CTroupe_sampling_interval() != 64)
        #expect(CTroupe_sampling_interval() != 8)
    }

    @Test func withIntervalOneEveryEnvelopeOfAThreadIsStampedOnceTheThreadNoticed() {
        CTroupe_sampling_begin(1)
        defer { CTroupe_sampling_end(1) }
        // A thread re-reads the interval within 1,024 allocations.
        for _ in 0..<1_100 { CTroupe_envelope_free(CTroupe_envelope_alloc(8)) }
        let before = CTroupe_monotonic_ns()
        var stamps: [UInt64] = []
        for _ in 0..<100 {
            let envelope = CTroupe_envelope_alloc(8)!
            stamps.append(envelope.pointee.side.sent_at)
            CTroupe_envelope_free(envelope)
        }
        #expect(stamps.allSatisfy { $0 >= UInt64(before) }, "every envelope carries its send time")
    }
}
