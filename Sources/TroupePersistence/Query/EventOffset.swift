/// Where a reader of tagged events has got to: the events after it are the ones it has not
/// read. Offsets grow in the order in which the store made events visible, so a reader that
/// stores its offset and resumes after it misses nothing and reads nothing twice.
///
/// Keep it as its ``description`` (`"transaction:position"`) and read it back with
/// ``init(_:)``. SQLite and the in-memory store number events (``transaction`` is 0);
/// PostgreSQL orders them by the writing transaction's id, then by position within it.
public struct EventOffset: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The writing transaction (PostgreSQL's `xid8`); 0 elsewhere.
    public var transaction: UInt64
    /// The event's place (in its transaction, for PostgreSQL).
    public var position: Int64

    /// Before every event.
    public static let start = EventOffset(transaction: 0, position: 0)

    public init(transaction: UInt64 = 0, position: Int64) {
        self.transaction = transaction
        self.position = position
    }

    /// Reads a ``description``; nil if `text` is not one.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let transaction = UInt64(parts[0]), let position = Int64(parts[1]) else { return nil }
        self.init(transaction: transaction, position: position)
    }

    public var description: String { "\(transaction):\(position)" }

    public static func < (left: EventOffset, right: EventOffset) -> Bool {
        (left.transaction, left.position) < (right.transaction, right.position)
    }
}

/// An event found by its tag, with the offset to resume after it.
public struct TaggedEvent: Sendable, Hashable {
    public var offset: EventOffset
    /// The tag it was found by.
    public var tag: String
    /// The event, its actor's identity and its number in that actor's history.
    public var event: StoredEvent

    public init(offset: EventOffset, tag: String, event: StoredEvent) {
        self.offset = offset
        self.tag = tag
        self.event = event
    }
}
