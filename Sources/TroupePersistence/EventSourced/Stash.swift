/// Commands that wait while a write or the recovery is in flight, first in, first out.
struct Stash<Element> {
    private var items: [Element] = []
    private var head = 0

    var count: Int { items.count - head }

    mutating func push(_ item: Element) { items.append(item) }

    mutating func pop() -> Element? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.count <= 1_024)
            head = 0
        } else if head >= 1_024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }
}
