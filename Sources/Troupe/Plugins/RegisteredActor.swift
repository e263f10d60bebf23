/// How a registered actor is provided.
public enum ProviderKind: String, Sendable, Hashable, CustomStringConvertible {
    /// One actor, created on first access from a closure.
    case singleton
    /// One actor, created from a value given at registration, spawned when the system is built
    /// (or when the registering plugin is loaded).
    case instance
    /// One actor, created on first access by a closure that is given the system.
    case factory
    /// An ``ActorPool`` of members of one definition, created on first access.
    case pool

    public var description: String { rawValue }

    /// Whether lookups return an ``ActorPool`` (rather than an ``ActorRef``).
    public var isPool: Bool { self == .pool }
}

/// A registered actor, as listed by ``ActorSystem/registeredActors``.
public struct RegisteredActor: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    public let typeName: String
    public let messageTypeName: String
    public let kind: ProviderKind
    /// The plugin that registered it, if a plugin did.
    public let plugin: String?

    public var description: String {
        "\(name): \(kind) of \(typeName) accepting \(messageTypeName)" + (plugin.map { " (plugin \($0))" } ?? "")
    }
}
