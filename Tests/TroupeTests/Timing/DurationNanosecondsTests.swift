import Testing

@testable import Troupe

/// `Duration.nanoseconds`, the one conversion behind timer delays, periodic intervals, ask
/// timeouts and shutdown deadlines: whole nanoseconds, truncated toward zero, saturating.
@Suite struct DurationNanosecondsTests {
    @Test func wholeNanosecondsOfPositiveAndNegativeDurations() {
        #expect(Duration.zero.nanoseconds == 0)
        #expect(Duration.nanoseconds(1).nanoseconds == 1)
        #expect(Duration.milliseconds(1500).nanoseconds == 1_500_000_000)
        #expect(Duration.seconds(3600).nanoseconds == 3_600_000_000_000)
        #expect(Duration.milliseconds(-1500).nanoseconds == -1_500_000_000)
        #expect(Duration.nanoseconds(-7).nanoseconds == -7)
    }

    @Test func fractionsOfANanosecondAreTruncatedTowardZero() {
        let justUnderThree = Duration(secondsComponent: 2, attosecondsComponent: 999_999_999_999_999_999)
        #expect(justUnderThree.nanoseconds == 2_999_999_999)
        #expect((Duration.nanoseconds(1) / 2).nanoseconds == 0)
        #expect((Duration.nanoseconds(-3) / 2).nanoseconds == -1)
    }

    @Test func theLargestNanosecondCountsConvertExactly() {
        #expect(Duration.nanoseconds(Int64.max).nanoseconds == Int64.max)
        #expect(Duration.nanoseconds(Int64.min).nanoseconds == Int64.min)
    }

    @Test func durationsWhoseSecondsOverflowSaturate() {
        #expect(Duration.seconds(Int64.max).nanoseconds == Int64.max)
        #expect(Duration.seconds(1 << 40).nanoseconds == Int64.max)
        #expect(Duration.seconds(Int64.min).nanoseconds == Int64.min)
        #expect(Duration.seconds(-(1 << 40)).nanoseconds == Int64.min)
    }

    /// When the whole seconds still fit in Int64 nanoseconds but adding the fraction does not,
    /// the sum saturates (it once wrapped: `.nanoseconds(Int64.max) + .nanoseconds(1)` became
    /// Int64.min, so a timer with that delay was due at once).
    @Test func durationsJustBeyondTheLargestNanosecondCountSaturate() {
        #expect((Duration.nanoseconds(Int64.max) + .nanoseconds(1)).nanoseconds == Int64.max)
        #expect((Duration.nanoseconds(Int64.min) - .nanoseconds(1)).nanoseconds == Int64.min)
    }
}
