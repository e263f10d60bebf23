import Synchronization

/// A thread-safe, append-only log: handlers, hooks and observers report what they saw; the
/// test reads it afterwards.
public final class Recorder<Element: Sendable>: Sendable {
    private let storage = TestLock<[Element]>([])

    public init() {}

    public func append(_ element: Element) { storage.withLock { $0.append(element) } }

    public func append(contentsOf elements: some Sequence<Element>) {
        let array = Array(elements)
        storage.withLock { $0.append(contentsOf: array) }
    }

    /// A snapshot of everything recorded so far, in recording order.
    public var values: [Element] { storage.withLock { $0 } }

    public var count: Int { storage.withLock { $0.count } }

    public var last: Element? { storage.withLock { $0.last } }

    public func removeAll() { storage.withLock { $0.removeAll() } }
}

/// A thread-safe integer counter.
public final class AtomicCounter: Sendable {
    private let storage: Atomic<Int>

    public init(_ initial: Int = 0) { storage = Atomic(initial) }

    /// Adds `delta` and returns the new value.
    @discardableResult
    public func increment(by delta: Int = 1) -> Int {
        storage.add(delta, ordering: .sequentiallyConsistent).newValue
    }

    public var value: Int { storage.load(ordering: .sequentiallyConsistent) }
}

/// A thread-safe boolean that is set once.
public final class Flag: Sendable {
    private let storage = Atomic<Bool>(false)

    public init() {}

    public func set() { storage.store(true, ordering: .sequentiallyConsistent) }

    public var isSet: Bool { storage.load(ordering: .sequentiallyConsistent) }
}

/// A value written once by one thread and read by others (for results computed on a thread
/// the test does not await directly).
public final class Box<Value: Sendable>: Sendable {
    private let storage = TestLock<Value?>(nil)

    public init() {}

    public func set(_ value: Value) { storage.withLock { $0 = value } }

    public var value: Value? { storage.withLock { $0 } }
}
