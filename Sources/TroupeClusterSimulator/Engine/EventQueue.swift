/// The simulation's pending events, earliest first; events due at the same instant come out in
/// the order they were scheduled, so a run depends on its seed only.
///
/// A binary heap of small keys (time, order, slot): sifting moves 24 bytes per step, while each
/// payload (an event of the simulation, with its frames) is written once into a slot and read
/// once when it is popped. Freed slots are reused, so a long run allocates no more slots than
/// the most events ever pending at once.
struct EventQueue<Payload> {
    struct Entry {
        let time: Int64
        let order: UInt64
        let payload: Payload
    }

    private struct Key {
        let time: Int64
        let order: UInt64
        let slot: Int

        func precedes(_ other: Key) -> Bool { (time, order) < (other.time, other.order) }
    }

    private var heap: [Key] = []
    private var payloads: [Payload?] = []
    private var freeSlots: [Int] = []
    private var scheduled: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var nextTime: Int64? { heap.first?.time }

    mutating func push(_ payload: Payload, at time: Int64) {
        scheduled += 1
        let slot: Int
        if let reused = freeSlots.popLast() {
            slot = reused
            payloads[slot] = payload
        } else {
            slot = payloads.count
            payloads.append(payload)
        }
        heap.append(Key(time: time, order: scheduled, slot: slot))
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
        guard let payload = payloads[first.slot].take() else {
            fatalError("EventQueue: slot \(first.slot) of a pending event holds no payload")
        }
        freeSlots.append(first.slot)
        return Entry(time: first.time, order: first.order, payload: payload)
    }
}
