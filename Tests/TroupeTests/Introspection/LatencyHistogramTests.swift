import CTroupe
import Testing

@testable import Troupe

/// The C histogram's bucket arithmetic and the Swift copy's percentiles.
@Suite struct LatencyHistogramTests {
    @Test func everyValueFallsInTheBucketWhoseBoundsHoldIt() {
        var values: [UInt64] = Array(0..<4096)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 { values.append(UInt64.random(in: 1..<(UInt64(1) << 39), using: &generator)) }
        for value in values {
            let bucket = Int(CTroupe_histogram_bucket(value))
            #expect(LatencyHistogram.lowerBound(ofBucket: bucket) <= value)
            if bucket + 1 < LatencyHistogram.bucketCount {
                #expect(value < LatencyHistogram.lowerBound(ofBucket: bucket + 1), "value \(value) in bucket \(bucket)")
            }
        }
        #expect(Int(CTroupe_histogram_bucket(UInt64.max)) == LatencyHistogram.bucketCount - 1, "larger values clamp")
    }

    @Test func bucketsAreAtMostAQuarterOfTheirPowerOfTwoWide() {
        for bucket in 4..<(LatencyHistogram.bucketCount - 1) {
            let lower = LatencyHistogram.lowerBound(ofBucket: bucket)
            let width = LatencyHistogram.lowerBound(ofBucket: bucket + 1) - lower
            #expect(width * 4 <= lower, "bucket \(bucket): [\(lower), +\(width))")
        }
    }

    @Test func percentilesOfRecordedValuesAreWithinTheBucketPrecision() {
        let histogram = CTroupe_histogram_create()!
        defer { CTroupe_histogram_destroy(histogram) }
        // 1...1000 µs, one sample each: p50 is 500 µs, p99 990 µs, max 1 ms.
        for micros in 1...1000 { CTroupe_histogram_record(histogram, UInt64(micros) * 1_000) }
        let copy = LatencyHistogram(copying: histogram)
        #expect(copy.count == 1000)
        #expect(copy.maximum == .milliseconds(1))
        #expect(copy.mean == .nanoseconds(500_500))
        for (fraction, expected) in [(0.5, 500_000.0), (0.99, 990_000.0), (0.1, 100_000.0)] {
            let measured = Double(copy.percentile(fraction).nanoseconds)
            #expect(abs(measured - expected) / expected <= 0.125, "p\(fraction * 100): \(measured) vs \(expected)")
        }
        #expect(copy.percentile(1) <= copy.maximum, "never above the largest sample")
        #expect(copy.percentile(-3) == copy.percentile(0), "fractions are clamped")
    }

    @Test func anEmptyHistogramReportsZeros() {
        let empty = LatencyHistogram()
        #expect(empty.count == 0)
        #expect(empty.percentile(0.5) == .zero)
        #expect(empty.mean == .zero)
        #expect(empty.description == "n=0")
    }

    @Test func mergingAddsSamplesAndKeepsTheLargest() {
        let first = CTroupe_histogram_create()!
        let second = CTroupe_histogram_create()!
        defer {
            CTroupe_histogram_destroy(first)
            CTroupe_histogram_destroy(second)
        }
        CTroupe_histogram_record(first, 100)
        CTroupe_histogram_record(second, 5_000)
        CTroupe_histogram_record(second, 7)
        let merged = LatencyHistogram(copying: first).merged(with: LatencyHistogram(copying: second))
        #expect(merged.count == 3)
        #expect(merged.totalNanoseconds == 5_107)
        #expect(merged.maximumNanoseconds == 5_000)
    }
}
