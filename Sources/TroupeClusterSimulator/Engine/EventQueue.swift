/// The simulation's pending events, earliest first; events due at the same instant come out in
/// the order they were scheduled, so a run depends on its seed only. A binary heap.
struct EventQueue<Payload> {
    struct Entry {
        let time: Int64
        let order: UInt64
        let payload: Payload

        func precedes(_ other: Entry) -> Bool { (time, order) < (other.time, other.order) }
    }

    private var heap: [Entry] = []
    private var scheduled: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var nextTime: Int64? { heap.first?.time }

    mutating func push(_ payload: Payload, at time: Int64) {
        scheduled += 1
        heap.append(Entry(time: time, order: scheduled, payload: payload))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> Entry? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let first = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { break }
            var child = left
            if left + 1 < heap.count && heap[left + 1].precedes(heap[left]) { child = left + 1 }
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            parent = child
        }
        return first
    }
}
