import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// The stress suite. Heavy, so serialized: its tests (declared in the extensions in this
/// directory) run one at a time and each gets both cores.
///
/// Sizes come from ``StressScale`` (env `TROUPE_STRESS_MESSAGES`, `TROUPE_STRESS_SCALE`):
/// the default is the normal CI size (10^7 messages in the FIFO test); the TSan CI job runs
/// `TROUPE_STRESS_MESSAGES=1000000 swift test --sanitize=thread --filter TroupeStressTests`.
@Suite(.serialized) struct StressTests {
    init() {
        print("TroupeStressTests sizes: \(StressScale.summary)")
    }
}

/// A fast, deterministic pseudo-random sequence for producers (no locks, no syscalls).
struct XorShift {
    var state: UInt64

    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }

    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

/// Outcomes of `tell` as counted by one sender, merged at the end.
struct OutcomeTally: Sendable {
    var enqueued = 0
    var droppingOldest = 0
    var deadLettered: [DeadLetterReason.Kind: Int] = [:]

    var sent: Int { enqueued + droppingOldest + deadLetteredTotal }
    var deadLetteredTotal: Int { deadLettered.values.reduce(0, +) }

    mutating func record(_ outcome: TellOutcome) {
        switch outcome {
        case .enqueued: enqueued += 1
        case .enqueuedDroppingOldest: droppingOldest += 1
        case .deadLettered(let reason): deadLettered[reason.kind, default: 0] += 1
        }
    }

    mutating func merge(_ other: OutcomeTally) {
        enqueued += other.enqueued
        droppingOldest += other.droppingOldest
        for (kind, count) in other.deadLettered { deadLettered[kind, default: 0] += count }
    }
}

/// Collects per-thread tallies.
final class TallyBoard: Sendable {
    private let total = TestLock(OutcomeTally())
    func add(_ tally: OutcomeTally) { total.withLock { $0.merge(tally) } }
    var tally: OutcomeTally { total.withLock { $0 } }
}

extension DeadLetterOffice {
    /// Every count, for failure messages.
    var summary: String {
        DeadLetterReason.Kind.allCases.map { "\($0): \(count($0))" }.joined(separator: ", ")
    }
}
