import Foundation
import Testing
import Troupe

@testable import TroupeObserver

/// The pieces a document is made of: the JSON text, the view a query asks for, and the p99 of
/// an interval between two readings of a histogram.
struct ObserverStateTests {
    @Test func jsonTextEscapesWhatWouldBreakTheDocumentOrThePage() throws {
        var json = JSONText()
        let nasty = "a\"b\\c\nd\u{01}e</script>\u{2028}f"
        json.object { json in
            json.member("name", nasty)
            json.member("count", 3)
            json.member("rate", 1.23456)
            json.member("none", nil as Int?)
            json.key("list")
            json.array { json in
                json.value(true)
                json.value("x")
            }
        }
        #expect(!json.text.contains("</script>"), "a name must not close the page's script")
        #expect(!json.text.contains("\u{2028}"))
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json.text.utf8)) as? [String: Any])
        #expect(parsed["name"] as? String == nasty)
        #expect(parsed["count"] as? Int == 3)
        #expect(parsed["rate"] as? Double == 1.235)
        #expect(parsed["none"] is NSNull)
        #expect((parsed["list"] as? [Any])?.count == 2)
    }

    @Test func aViewFromAQueryKeepsItsBounds() {
        let view = ActorView(query: "sort=depth&q=Cart%20%23&limit=100000&extra=1")
        #expect(view.sort == .depth)
        #expect(view.ranking == .mailboxDepth)
        #expect(view.query == "cart #")
        #expect(view.limit == ActorView.maximumLimit)
        let long = ActorView(query: Substring("q=" + String(repeating: "x", count: 1000)))
        #expect(long.query.count == ActorView.maximumQueryLength)
        let broken = ActorView(query: "sort=&limit=abc&q=%zz")
        #expect(broken.sort == .processed)
        #expect(broken.limit == 50)
        #expect(broken.query == "")
        // Only the first 16 pairs are read.
        let many = ActorView(query: Substring((0..<20).map { "x\($0)=1" }.joined(separator: "&") + "&limit=7"))
        #expect(many.limit == 50)
    }

    @Test func theP99OfAnIntervalCountsOnlyItsSamples() {
        let buckets = LatencyHistogram.bucketCount
        var before = [UInt64](repeating: 0, count: buckets)
        before[40] = 1_000_000  // old, slow samples that must not weigh on the interval
        var now = before
        now[10] += 99
        now[20] += 1
        let p99 = SystemSampler.p99(since: before, now: now)
        let expected = LatencyHistogram.lowerBound(ofBucket: 10)
        let next = LatencyHistogram.lowerBound(ofBucket: 11)
        #expect(p99?.samples == 100)
        #expect(p99?.microseconds == Double(expected + (next - expected) / 2) / 1000)
        #expect(SystemSampler.p99(since: now, now: now) == nil, "no samples in the interval")
    }
}
