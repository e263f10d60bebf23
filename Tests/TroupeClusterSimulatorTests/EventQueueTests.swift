import Testing
import TroupeClusterMembership

@testable import TroupeClusterSimulator

/// The simulator's event queue against a reference: earliest first, ties in the order pushed,
/// every payload back once, slots reused across interleaved pushes and pops.
@Suite("EventQueue: earliest first, ties in push order")
struct EventQueueTests {
    @Test func interleavedPushesAndPopsComeOutInTimeThenPushOrder() {
        var queue = EventQueue<String>()
        // The reference: every pending (time, push number, payload), popped by a linear scan.
        var pending: [(time: Int64, order: Int, payload: String)] = []
        var random = SplitMix(seed: 42)  // the membership module's (package access)
        var pushed = 0
        var popped = 0
        var now: Int64 = 0
        for step in 0..<5_000 {
            if pending.isEmpty || random.next() % 3 != 0 {
                // Few distinct times, so many events tie.
                let time = now + Int64(random.next() % 8)
                pushed += 1
                let payload = "event \(pushed) at \(time)"
                queue.push(payload, at: time)
                pending.append((time, pushed, payload))
            } else {
                let expected = pending.indices.min {
                    (pending[$0].time, pending[$0].order) < (pending[$1].time, pending[$1].order)
                }!
                let entry = queue.pop()
                #expect(entry?.payload == pending[expected].payload, "step \(step)")
                #expect(entry?.time == pending[expected].time)
                now = pending[expected].time
                pending.remove(at: expected)
                popped += 1
            }
            #expect(queue.count == pending.count)
            #expect(queue.nextTime == pending.map(\.time).min())
        }
        let remaining = pending.sorted { ($0.time, $0.order) < ($1.time, $1.order) }
        for event in remaining {
            #expect(queue.pop()?.payload == event.payload)
            popped += 1
        }
        #expect(popped == pushed)
        #expect(queue.isEmpty)
    }

    @Test func anEmptyQueueHasNothingToPop() {
        var queue = EventQueue<Int>()
        #expect(queue.pop() == nil)
        #expect(queue.nextTime == nil)
        queue.push(7, at: 3)
        #expect(queue.pop()?.payload == 7)
        #expect(queue.pop() == nil)
        #expect(queue.isEmpty)
    }
}
