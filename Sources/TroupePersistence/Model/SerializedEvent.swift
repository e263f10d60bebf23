/// An event as a store keeps it: its type's name and version (for upcasting old events), and
/// its bytes. What the bytes mean is the ``PersistenceCodec``'s business, never the store's.
public struct SerializedEvent: Sendable, Hashable {
    /// The event type's stable name (not the Swift type name, which changes with refactoring).
    public var typeName: String
    /// The version of that type's layout the bytes follow.
    public var version: Int
    /// The encoded event.
    public var payload: [UInt8]

    public init(typeName: String, version: Int, payload: [UInt8]) {
        self.typeName = typeName
        self.version = version
        self.payload = payload
    }
}

/// An event read back from a store, with its place in its actor's history.
public struct StoredEvent: Sendable, Hashable {
    public var persistenceID: PersistenceID
    /// Its number in the actor's history, from 1, without gaps.
    public var sequenceNumber: Int64
    public var event: SerializedEvent

    public init(persistenceID: PersistenceID, sequenceNumber: Int64, event: SerializedEvent) {
        self.persistenceID = persistenceID
        self.sequenceNumber = sequenceNumber
        self.event = event
    }
}

/// An actor's state as of one event, stored so that recovery need not replay from the start.
public struct SerializedSnapshot: Sendable, Hashable {
    /// The last event the state includes.
    public var sequenceNumber: Int64
    /// The state, encoded (``SerializedEvent/typeName`` and version describe the state's type).
    public var state: SerializedEvent

    public init(sequenceNumber: Int64, state: SerializedEvent) {
        self.sequenceNumber = sequenceNumber
        self.state = state
    }
}
