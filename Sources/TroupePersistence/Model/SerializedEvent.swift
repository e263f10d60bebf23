/// An event as a store keeps it: its type's name and version (for upcasting old events), and
/// its bytes. What the bytes mean is the ``PersistenceCodec``'s business, never the store's.
public struct SerializedEvent: Sendable, Hashable {
    /// The event type's stable name (not the Swift type name, which changes with refactoring).
    public var typeName: String
    /// The version of that type's layout the bytes follow.
    public var version: Int
    /// The encoded event.
    public var payload: [UInt8]
    /// The event's tags, sorted (an event's only: snapshots and durable states have none), by
    /// which the read side finds it (``EventsByTagQuery``). See ``EventSourcedActor/tags(for:)``.
    public var tags: [String]

    public init(typeName: String, version: Int, payload: [UInt8], tags: Set<String> = []) {
        self.typeName = typeName
        self.version = version
        self.payload = payload
        self.tags = tags.sorted()
    }

    /// The longest tag, in UTF-8 bytes.
    public static let maximumTagLength = 256

    /// Why `tag` cannot be a tag, or nil if it can: a tag is 1 to ``maximumTagLength`` bytes of
    /// UTF-8 without control characters.
    public static func problem(withTag tag: String) -> String? {
        if tag.isEmpty { return "a tag is not empty" }
        if tag.utf8.count > maximumTagLength {
            return "a tag is at most \(maximumTagLength) bytes of UTF-8 (this one has \(tag.utf8.count))"
        }
        if tag.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) {
            return "a tag has no control characters"
        }
        return nil
    }
}

/// Tags as stored beside an event: a JSON array of strings (what SQLite's `json_each` and
/// PostgreSQL's `jsonb_array_elements_text` read in the stores' triggers), or nil for none.
/// Tags hold no control characters (``SerializedEvent/problem(withTag:)``), so only `"` and `\`
/// need escaping.
package enum StoredTags {
    package static func encode(_ tags: [String]) -> String? {
        if tags.isEmpty { return nil }
        var text = "["
        for (index, tag) in tags.enumerated() {
            if index > 0 { text += "," }
            text += "\""
            for character in tag.unicodeScalars {
                if character == "\"" || character == "\\" { text += "\\" }
                text.unicodeScalars.append(character)
            }
            text += "\""
        }
        return text + "]"
    }

    /// Reads what ``encode(_:)`` wrote (nil or empty: no tags); nil if `text` is not such an array.
    package static func decode(_ text: String?) -> [String]? {
        guard let text, !text.isEmpty else { return [] }
        var scalars = text.unicodeScalars.makeIterator()
        guard scalars.next() == "[" else { return nil }
        var tags: [String] = []
        var expectingTag = true
        while let scalar = scalars.next() {
            switch scalar {
            case "]" where tags.isEmpty || !expectingTag:
                return scalars.next() == nil ? tags : nil
            case "," where !expectingTag:
                expectingTag = true
            case "\"" where expectingTag:
                var tag = String.UnicodeScalarView()
                while true {
                    guard var next = scalars.next() else { return nil }
                    if next == "\"" { break }
                    if next == "\\" {
                        guard let escaped = scalars.next(), escaped == "\"" || escaped == "\\" else { return nil }
                        next = escaped
                    }
                    tag.append(next)
                }
                tags.append(String(tag))
                expectingTag = false
            default:
                return nil
            }
        }
        return nil
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
