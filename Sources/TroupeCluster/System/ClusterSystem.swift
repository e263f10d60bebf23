internal import TroupeLocks
import CoreMetrics
import Distributed
import Logging
import NIOCore
import Synchronization
import Troupe
import TroupeAddresses
import TroupeClusterMembership

/// A `DistributedActorSystem` that spans processes and machines: Swift's `distributed actor`s,
/// running on Troupe's workers (see ``ClusterActor``), called across nodes over an
/// authenticated TCP connection per pair of nodes, with SWIM membership, a receptionist and
/// remote death watch.
///
/// ```swift
/// let cluster = try await ClusterSystem(
///     settings: ClusterSettings(port: 7337, seeds: [("10.0.0.1", 7337)], secret: secret),
///     actorSystem: system)
/// let greeter = Greeter(actorSystem: cluster)
/// cluster.receptionist.checkIn(greeter, with: .greeters)
/// ```
///
/// Threads: every method may be called from any thread. Frames are handled on the transport's
/// threads; distributed methods run on Troupe's workers; membership runs in a Troupe actor.
public final class ClusterSystem: DistributedActorSystem, Sendable {
    public typealias ActorID = ClusterActorID
    public typealias InvocationEncoder = ClusterInvocationEncoder
    public typealias InvocationDecoder = ClusterInvocationDecoder
    public typealias ResultHandler = ClusterResultHandler
    public typealias SerializationRequirement = any Codable

    /// This node: the address it listens on and the uid it drew at start.
    public let node: ClusterNode
    public let settings: ClusterSettings
    /// Whether ``ClusterSettings/coder`` is the binary coder, whose common scalars decode
    /// without a `userInfo` dictionary (see `decodeValue`).
    let usesBinaryCoder: Bool
    /// The Troupe system the cluster's actors and timers run on. The cluster does not shut it
    /// down: shut the cluster down first, then the actor system. If the actor system shuts
    /// down first, the cluster shuts down with it (calls waiting then fail with
    /// ``ClusterCallError/systemShutDown``).
    public let actorSystem: ActorSystem
    let transport: any ClusterTransport
    let handshake: Handshake
    let logger: Logger
    let metrics: ClusterMetrics
    /// The executor of a ``ClusterActor`` reference whose id has none (never used to run code).
    let fallbackExecutor: TroupeSerialExecutor

    // The tables, each under a lock of its own. Lock order: none of these locks is taken while
    // another of them is held, except `associations` → `admission` (a connection's release
    // under the table's lock is not needed, so even that pair is never nested today). Every
    // `withLock` body here only reads or writes its table: continuations are resumed, events
    // published and frames sent after the lock is released.
    let localActors = Locked(LocalActors())
    let associations = Locked(AssociationTable())
    let pendingCalls = Locked(PendingCalls())
    let memberTable = Locked(MemberTable())
    let receptionistTable = Locked(ReceptionistTable())
    let watchTable = Locked(WatchTable())
    let admission: Locked<ConnectionAdmission>
    let warnings: Locked<WarningLimiter>
    let nextCallID = Atomic<UInt64>(0)
    /// Dials of members named in gossip now in progress (see `dialDiscovered`). Relaxed: a count.
    let discoveryDials = Atomic<Int>(0)
    /// Distributed methods this node has run, resolved once (see ``ResolvedTarget``).
    let targets = DistributedTargetTable()
    let isShutDown = Atomic<Bool>(false)
    let membershipRef = Locked<ActorRef<MembershipActor.Message>?>(nil)
    private let acceptGate: AcceptGate

    // Counters kept for tests and introspection (also exported as metrics).
    let handshakeFailures = Atomic<Int>(0)
    let protocolViolations = Atomic<Int>(0)
    let reconnects = Atomic<Int>(0)

    /// Starts a node: binds, then joins through ``ClusterSettings/seeds`` in the background
    /// (``membershipEvents()`` reports who joins).
    ///
    /// Throws ``ClusterStartError`` for a short secret, a setting out of range or a port that
    /// cannot be bound.
    public init(settings: ClusterSettings, actorSystem: ActorSystem) async throws(ClusterStartError) {
        let secretBytes = settings.secret.utf8.count
        guard secretBytes >= 16 else { throw .secretTooShort(bytes: secretBytes) }
        guard settings.maximumFrameSize >= 1024 else {
            throw .invalidSetting("maximumFrameSize \(settings.maximumFrameSize) is below 1024 bytes")
        }
        guard settings.callTimeout > .zero else {
            throw .invalidSetting("callTimeout must be positive, got \(settings.callTimeout)")
        }
        guard (0...65535).contains(settings.port) else {
            throw .invalidSetting("port \(settings.port) is outside 0...65535")
        }
        if let problem = settings.limits.problem { throw .invalidSetting(problem) }
        if let problem = settings.membership.problem { throw .invalidSetting(problem) }
        guard settings.limits.unauthenticatedFrameSize <= settings.maximumFrameSize else {
            throw .invalidSetting(
                "limits.unauthenticatedFrameSize \(settings.limits.unauthenticatedFrameSize) exceeds maximumFrameSize \(settings.maximumFrameSize)"
            )
        }
        let transport = settings.transport ?? NIOTransport()
        let gate = AcceptGate()
        let port: Int
        do {
            port = try await transport.listen(
                host: settings.host, port: settings.port, maximumFrameSize: settings.limits.unauthenticatedFrameSize
            ) { connection in gate.accept(connection) }
        } catch {
            await transport.shutdown()
            throw .bindFailed(host: settings.host, port: settings.port, reason: "\(error)")
        }
        var generator = SystemRandomNumberGenerator()
        node = ClusterNode(host: settings.host, port: port, uid: UInt64.random(in: 1 ... .max, using: &generator))
        self.settings = settings
        usesBinaryCoder = settings.coder is BinaryClusterCoder
        self.actorSystem = actorSystem
        self.transport = transport
        handshake = Handshake(secret: settings.secret, clusterName: settings.clusterName)
        var logger = settings.logger
        logger[metadataKey: "cluster_node"] = "\(node)"
        self.logger = logger
        metrics = ClusterMetrics(
            clusterName: settings.clusterName, factory: settings.metricsFactory ?? MetricsSystem.factory)
        fallbackExecutor = actorSystem.makeSerialExecutor()
        acceptGate = gate
        admission = Locked(ConnectionAdmission(limits: settings.limits))
        warnings = Locked(WarningLimiter(interval: settings.limits.warningInterval))
        memberTable.withLock { $0.statuses[node] = .alive(incarnation: 0) }
        let membership = actorSystem.spawn(MembershipActor(cluster: self))
        membershipRef.withLock { $0 = membership }
        gate.open(self)
        provideSnapshotSection()
        sweepDeadlines()
        logger.info("cluster node started", metadata: ["seeds": "\(settings.seeds.map { "\($0.host):\($0.port)" })"])
        if !transport.encryptsTraffic && !Self.isLoopback(settings.host) {
            logger.warning(
                "the cluster listens on \(settings.host) without encryption: anyone on the path can read calls and inject frames into authenticated connections; set ClusterSettings.transport to NIOTransport(security: ClusterTLS(...)) (product TroupeClusterTLS), or keep the cluster on a private network"
            )
        }
    }

    /// Leaves the cluster: tells every peer (they mark this node down at once), fails the
    /// remote calls still waiting (for a reply, or for a connection being dialled) with
    /// ``ClusterCallError/systemShutDown``, stops membership and
    /// closes the transport. Calls after this fail the same way. Idempotent.
    public func shutdown() async {
        guard !isShutDown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        logger.info("cluster node leaving")
        let current = associations.withLock { Array($0.current.values) }
        for association in current { association.send(.leaving) }
        failCalls(where: { _ in true }, with: { _ in .systemShutDown })
        if let membership = membershipRef.withLock({ $0 }) {
            membership.stop()
        }
        await transport.shutdown()
        // Dials still waiting (a seed being dialled, a call's first contact) fail now: their
        // continuations are in the table, and nothing else will resume them.
        let waiting = associations.withLock { table in
            let waiting = table.dials.values.flatMap { $0 }
            table = AssociationTable()
            table.isClosed = true
            return waiting
        }
        for waiter in waiting { waiter.resume(throwing: ClusterCallError.systemShutDown) }
        finishMembershipStreams()
        finishReceptionist()
        finishWatches()
    }

    var shutDown: Bool { isShutDown.load(ordering: .acquiring) }

    /// Whether `host` is a loopback address or `localhost` (``HostAddress/isLoopback(_:)``, the
    /// observer's rule too): nothing off this machine can reach it.
    static func isLoopback(_ host: String) -> Bool { HostAddress.isLoopback(host) }

    /// Connections now open and still handshaking, and how many were closed on arrival for
    /// going over a ``ClusterConnectionLimits`` limit (also the metric
    /// `troupe_cluster_connections_refused_total`).
    public var connectionCounts: (open: Int, handshaking: Int, refusedByLimits: Int) {
        admission.withLock { ($0.open, $0.unauthenticated, $0.refused) }
    }

    /// Protocol violations and failed handshakes so far (also the metrics
    /// `troupe_cluster_handshake_failures_total` and `troupe_cluster_protocol_violations_total`).
    public var refusedPeerCount: (handshakes: Int, protocolViolations: Int) {
        (handshakeFailures.load(ordering: .relaxed), protocolViolations.load(ordering: .relaxed))
    }

    /// Connections closed and dialled again because their member answered probes only
    /// through other members (``ClusterConnectionLimits/reconnectAfterIndirectAnswers``; also
    /// the metric `troupe_cluster_reconnects_total`).
    public var reconnectCount: Int { reconnects.load(ordering: .relaxed) }

    // MARK: DistributedActorSystem: identities

    public func assignID<Act>(_ actorType: Act.Type) -> ClusterActorID
    where Act: DistributedActor, Act.ID == ClusterActorID {
        let number = localActors.withLock { table in
            table.next += 1
            return table.next
        }
        let executor = actorType is any ClusterActor.Type ? actorSystem.makeSerialExecutor() : nil
        return ClusterActorID(node: node, number: number, executor: executor)
    }

    public func actorReady<Act>(_ actor: Act) where Act: DistributedActor, Act.ID == ClusterActorID {
        localActors.withLock { $0.byNumber[actor.id.number] = WeakActor(actor) }
    }

    public func resignID(_ id: ClusterActorID) {
        guard id.node == node else { return }
        localActors.withLock { _ = $0.byNumber.removeValue(forKey: id.number) }
        actorResigned(id)
    }

    public func resolve<Act>(id: ClusterActorID, as actorType: Act.Type) throws -> Act?
    where Act: DistributedActor, Act.ID == ClusterActorID {
        guard id.node == node else { return nil }
        guard let actor = localActors.withLock({ $0.byNumber[id.number]?.actor }) else {
            throw ClusterCallError.unknownActor(id)
        }
        guard let typed = actor as? Act else {
            throw ClusterCallError.invalidInvocation(
                "actor \(id) is a \(String(reflecting: type(of: actor))), not a \(String(reflecting: Act.self))")
        }
        return typed
    }

    /// The local actor with this number, if it is alive.
    func localActor(number: UInt64) -> (any DistributedActor)? {
        localActors.withLock { $0.byNumber[number]?.actor }
    }

    public func makeInvocationEncoder() -> ClusterInvocationEncoder {
        ClusterInvocationEncoder(coder: settings.coder)
    }
}

/// Local distributed actors by number. The system holds them weakly: a distributed actor lives
/// as long as its own node keeps a reference (remote references do not keep it alive).
struct LocalActors {
    var next: UInt64 = 0
    var byNumber: [UInt64: WeakActor] = [:]
}

struct WeakActor {
    weak var actor: (any DistributedActor)?
    init(_ actor: any DistributedActor) { self.actor = actor }
}

/// Hands connections accepted while the system is still starting to it once it is ready.
/// Holds the system weakly: the transport's listener holds the gate.
final class AcceptGate: Sendable {
    private struct State {
        weak var system: ClusterSystem?
        var isOpen = false
        var early: [any ClusterConnection] = []
    }
    private let state = Locked(State())

    func accept(_ connection: any ClusterConnection) {
        let (isOpen, system) = state.withLock { state -> (Bool, ClusterSystem?) in
            if !state.isOpen { state.early.append(connection) }
            return (state.isOpen, state.system)
        }
        guard isOpen else { return }
        if let system { system.accept(connection) } else { connection.close() }
    }

    func open(_ system: ClusterSystem) {
        let early = state.withLock { state in
            state.system = system
            state.isOpen = true
            defer { state.early = [] }
            return state.early
        }
        for connection in early { system.accept(connection) }
    }
}
