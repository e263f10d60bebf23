import Synchronization

/// Counts the observer's open connections and turns away those over the limit, so that a
/// client that opens connections without end cannot take the process's descriptors or memory.
final class ConnectionGate: Sendable {
    private let open = Atomic<Int>(0)
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Takes a place for a new connection; false when all are taken (the caller closes it).
    func enter() -> Bool {
        let count = open.wrappingAdd(1, ordering: .relaxed).newValue
        if count > limit {
            open.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Gives a place back when its connection closes.
    func leave() { open.wrappingSubtract(1, ordering: .relaxed) }

    var openConnections: Int { open.load(ordering: .relaxed) }
}

/// What the observer has done, for tests, the bench and ``Observer``'s properties: written on
/// the observer's thread, read anywhere.
final class ObserverCounters: Sendable {
    let samplesTaken = Atomic<Int>(0)
    let documentsSent = Atomic<Int>(0)
    let connectedPages = Atomic<Int>(0)
}
