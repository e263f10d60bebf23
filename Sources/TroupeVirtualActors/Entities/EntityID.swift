/// An entity's identity: its kind's name and its key within the kind (`cart`, `user-42`).
/// The entity exists logically for ever; activations of it come and go.
public struct EntityID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The kind's name, as registered (``EntityKind/name``).
    public let kind: String
    /// The entity's key within its kind.
    public let key: String

    public init(kind: String, key: String) {
        self.kind = kind
        self.key = key
    }

    /// `cart/user-42`.
    public var description: String { "\(kind)/\(key)" }
}
