import Testing
import Troupe

/// `LatencyRecorder`: records from any thread into Troupe's histogram buckets.
@Suite struct LatencyRecorderTests {
    @Test func recordsSamplesIntoTheHistogramsBuckets() {
        let recorder = LatencyRecorder()
        #expect(recorder.histogram.count == 0)
        recorder.record(.microseconds(100))
        recorder.record(.milliseconds(2))
        recorder.record(nanoseconds: 3)
        recorder.record(.nanoseconds(-5))  // counted as zero
        let histogram = recorder.histogram
        #expect(histogram.count == 4)
        #expect(histogram.maximum == .milliseconds(2))
        #expect(histogram.totalNanoseconds == 100_000 + 2_000_000 + 3)
        #expect(histogram.bucketCounts[0] == 1, "the negative sample is in the zero bucket")
        #expect(histogram.bucketCounts[3] == 1)
    }

    @Test func threadsRecordAtOnceWithoutLosingSamples() async {
        let recorder = LatencyRecorder()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<4 {
                group.addTask {
                    for sample in 0..<10_000 { recorder.record(nanoseconds: UInt64(task * 10_000 + sample)) }
                }
            }
        }
        let histogram = recorder.histogram
        #expect(histogram.count == 40_000)
        #expect(histogram.totalNanoseconds == (0..<40_000).reduce(0) { $0 + UInt64($1) })
        #expect(histogram.maximumNanoseconds == 39_999)
    }
}
