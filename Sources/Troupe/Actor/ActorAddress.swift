/// An actor's identity: a number unique within its system and an optional name.
public struct ActorAddress: Sendable, Hashable, CustomStringConvertible {
    public let id: UInt64
    public let name: String?

    public var description: String { name.map { "\($0)#\(id)" } ?? "actor#\(id)" }
}
