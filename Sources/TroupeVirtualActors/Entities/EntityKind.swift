import Troupe

/// A kind of virtual actor: its name, how an activation is made from an identity, and when
/// activations are passivated. Register it with ``EntityRegion/init(system:kind:)``.
///
/// ```swift
/// let carts = try EntityRegion(system: system, kind: EntityKind("cart", idleTimeout: .seconds(120)) { id in
///     Cart(owner: id.key)
/// })
/// carts.entity("user-42").tell(.add("apples"))
/// ```
public struct EntityKind<Actor: SpawnableActor>: Sendable {
    /// The kind's name: unique within a system, part of every ``EntityID`` of the kind.
    public let name: String
    /// How long an activation may go without a message through an ``EntityRef`` before it is
    /// passivated (stopped after the messages it already has; the next message activates it
    /// again). `nil`: never for idleness. Default 120 s.
    public var idleTimeout: Duration?
    /// At most this many activations of the kind at once on this node: an activation beyond it
    /// passivates the least recently used tenth of the limit (approximately: recency is known
    /// to the sweep's interval). `nil`: no limit. Default `nil`.
    public var activeLimit: Int?
    /// Options for each activation's spawn (every activation of the kind gets the same; a
    /// `name` here names them all). ``EntityRef``'s description gives the identity.
    ///
    /// An activation restarts in place after a failure only when these options set a
    /// `failureDecider` (its activations are then spawned with the factory, which costs each one
    /// about 220 bytes more). Otherwise a failed activation is stopped, or resumed if the
    /// system's decider says so, and the next message activates a fresh instance: a restart
    /// asked for by the system's decider becomes a stop, with the core's error log saying the
    /// actor has no factory.
    public var options: SpawnOptions
    /// Makes the actor for an identity, on every activation (and on a restart in place, see
    /// ``options``). Runs outside the region's lock, so it may use the region; capture the
    /// region weakly then: a strong capture is a cycle (region → factory → region) that keeps
    /// the region, and its system, alive after shutdown.
    public let factory: @Sendable (EntityID) -> Actor

    /// - Precondition: `name` is not empty, `idleTimeout` is positive and `activeLimit` is at
    ///   least 1.
    public init(
        _ name: String, idleTimeout: Duration? = .seconds(120), activeLimit: Int? = nil,
        options: SpawnOptions = .default, factory: @escaping @Sendable (EntityID) -> Actor
    ) {
        precondition(!name.isEmpty, "EntityKind: a kind needs a name")
        if let idleTimeout { precondition(idleTimeout > .zero, "EntityKind \(name): idleTimeout must be positive") }
        if let activeLimit { precondition(activeLimit >= 1, "EntityKind \(name): activeLimit must be at least 1") }
        self.name = name
        self.idleTimeout = idleTimeout
        self.activeLimit = activeLimit
        self.options = options
        self.factory = factory
    }
}
