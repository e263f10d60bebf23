internal import TroupeLocks
import Synchronization
internal import CTroupe

extension ActorSystem {
    /// Spawns a pool of `size` members made by `member(index)` (also called again to restart
    /// a member after a failure, and to add members to a growing pool).
    ///
    /// `options` applies to every member, each named `name-index`; the load-aware routings
    /// switch on ``SpawnOptions/tracksMailboxDepth``. Fails with ``PoolError`` for a size below
    /// 1 or a growth maximum below the size.
    public func spawnPool<Actor: SpawnableActor>(
        size: Int,
        routing: PoolRouting<Actor.Definition.Message> = .roundRobin,
        name: String? = nil,
        options: SpawnOptions = .default,
        member: @escaping @Sendable (Int) -> Actor
    ) throws(PoolError) -> ActorPool<Actor.Definition.Message> {
        let poolName = name ?? options.name ?? String(describing: Actor.self)
        let spawner = Self.memberSpawner(
            system: self, poolName: poolName, options: options,
            tracksLoad: routing.tracksLoad
        ) { Actor.runnable(member($0)) }
        return try ActorPool(name: poolName, system: self, size: size, routing: routing, spawnMember: spawner)
    }

    /// Spawns a pool whose members start from `make()` and are then set up by
    /// `configure(&member, index)`.
    public func spawnPool<Actor: SpawnableActor>(
        size: Int,
        routing: PoolRouting<Actor.Definition.Message> = .roundRobin,
        name: String? = nil,
        options: SpawnOptions = .default,
        of make: @escaping @Sendable () -> Actor,
        configure: @escaping @Sendable (inout Actor, Int) -> Void
    ) throws(PoolError) -> ActorPool<Actor.Definition.Message> {
        try spawnPool(
            size: size, routing: routing, name: name, options: options, member: configuredMember(make, configure))
    }

    static func memberSpawner<Definition: ActorDefinition>(
        system: ActorSystem, poolName: String, options: SpawnOptions, tracksLoad: Bool,
        member: @escaping @Sendable (Int) -> Definition
    ) -> @Sendable (Int) -> PoolMember<Definition.Message> {
        { [system] index in
            var memberOptions = options
            memberOptions.name = "\(poolName)-\(index)"
            guard tracksLoad else {
                return PoolMember(ref: system.spawnRef(options: memberOptions) { member(index) }, load: nil)
            }
            memberOptions.tracksMailboxDepth = true
            let load = MemberLoad()
            let ref = system.spawnRef(options: memberOptions) {
                LoadReportingMember(definition: member(index), load: load)
            }
            return PoolMember(ref: ref, load: load)
        }
    }
}

// MARK: Per-type handler pools

/// A member closure from a pair of closures: make a member, then configure it with its index. Shared by the `of:configure:` forms of ``ActorSystem/spawnPool(size:routing:name:options:member:)``
/// and of the registrar's pools.
func configuredMember<Member>(
    _ make: @escaping @Sendable () -> Member,
    _ configure: @escaping @Sendable (inout Member, Int) -> Void
) -> @Sendable (Int) -> Member {
    { index in
        var member = make()
        configure(&member, index)
        return member
    }
}
