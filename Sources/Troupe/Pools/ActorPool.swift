internal import TroupeLocks
import Synchronization
internal import CTroupe

/// A ref-like front for several actors of one definition (its members): each message goes to
/// one member chosen by the pool's ``PoolRouting``, or to all of them with ``broadcast(_:)``.
/// As with ActorKit's pools, a pool lets slow work (network calls) proceed several messages
/// at a time while each member still handles one message at a time.
///
/// ```swift
/// let api = try system.spawnPool(size: 3, routing: .leastLoaded) { index in APIActor(connection: index) }
/// api.tell(.prefetch(url))
/// let body = try await api.ask { .get(url, $0) }
/// api.broadcast(.flushCache)
/// ```
///
/// Thread-safety: `Sendable`; tell, ask and broadcast from any thread. Routing takes no lock
/// and allocates nothing: see ``PoolRouting``. Dropping the pool does not stop its members;
/// ``stop()`` does (as does shutting the system down).
public final class ActorPool<Message: Sendable>: @unchecked Sendable {  // raw `slots` buffer: each slot is written once, before a release store of `memberCount` covers it; readers acquire the count
    /// The pool's name; members are named `name-0`, `name-1`, …
    public let name: String
    /// The system the members run in.
    public let system: ActorSystem
    /// How messages are routed.
    public let routing: PoolRouting<Message>

    private let strategy: PoolRouting<Message>.Strategy
    private let capacity: Int
    private let slots: UnsafeMutablePointer<PoolMember<Message>>
    private let memberCount: Atomic<Int>
    /// Round-robin position, random sequence and tie-breaking start.
    private let cursor = Atomic<UInt64>(0)
    /// Held (try-lock) by the one sender that is adding a member to a growing pool.
    private let growing = Atomic<Bool>(false)
    private let spawnMember: @Sendable (Int) -> PoolMember<Message>

    init(name: String, system: ActorSystem, size: Int, routing: PoolRouting<Message>,
         spawnMember: @escaping @Sendable (Int) -> PoolMember<Message>) throws(PoolError) {
        try routing.validate(size: size)
        self.name = name
        self.system = system
        self.routing = routing
        self.strategy = routing.strategy
        self.capacity = routing.capacity(initialSize: size)
        self.spawnMember = spawnMember
        slots = .allocate(capacity: capacity)
        for index in 0..<size { (slots + index).initialize(to: spawnMember(index)) }
        memberCount = Atomic(size)
    }

    deinit {
        slots.deinitialize(count: memberCount.load(ordering: .acquiring))
        slots.deallocate()
    }

    // MARK: Sending

    /// Sends `message` to the member the routing picks (to every member with
    /// ``PoolRouting/broadcast``; the outcome is then `.enqueued` when every member took it,
    /// else the first other outcome). Never blocks, takes no lock.
    @discardableResult
    public func tell(_ message: consuming Message) -> TellOutcome {
        if case .broadcast = strategy { return broadcastToAll(message).firstFailure ?? .enqueued }
        let index = route(message)
        return slots[index].ref.tell(message)
    }

    /// Sends a copy of `message` to every member, whatever the routing. Returns how many
    /// members enqueued it.
    @discardableResult
    public func broadcast(_ message: Message) -> Int {
        broadcastToAll(message).enqueued
    }

    /// One copy per member; no allocation.
    private func broadcastToAll(_ message: Message) -> (enqueued: Int, firstFailure: TellOutcome?) {
        var enqueued = 0
        var firstFailure: TellOutcome?
        for index in 0..<memberCount.load(ordering: .acquiring) {
            let outcome = slots[index].ref.tell(message)
            if outcome.isEnqueued {
                enqueued += 1
            } else if firstFailure == nil {
                firstFailure = outcome
            }
        }
        return (enqueued, firstFailure)
    }

    /// Sends a request to the member the routing picks (with ``PoolRouting/broadcast``: the next
    /// member in turn) and waits for its answer; fails like ``ActorRef/ask(timeout:_:)``.
    nonisolated(nonsending)
    public func ask<Value: Sendable>(
        timeout: Duration? = nil,
        _ request: (Reply<Value>) -> Message
    ) async throws(AskError) -> Value {
        try await Asking.await(system, timeout: timeout) { state, limit in
            send(request(Reply(state)), state: state, timeout: limit)
        }
    }

    /// Sends a request and calls `onReply` exactly once with the answer or the error, on the
    /// thread that completes the ask.
    public func ask<Value: Sendable>(
        timeout: Duration? = nil,
        _ request: (Reply<Value>) -> Message,
        onReply: @escaping @Sendable (Result<Value, AskError>) -> Void
    ) {
        Asking.callback(system, timeout: timeout, onReply: onReply) { state, limit in
            send(request(Reply(state)), state: state, timeout: limit)
        }
    }

    /// ``ask(timeout:_:)`` that blocks the calling thread, for callers outside the runtime and
    /// dedicated-thread actors. On a shared worker thread, or from a member of this pool on its
    /// dedicated thread, it fails at once with ``AskError/blockingOnWorkerThread``.
    public func askBlocking<Value: Sendable>(
        timeout: Duration? = nil,
        _ request: (Reply<Value>) -> Message
    ) throws(AskError) -> Value {
        try Asking.blocking(system, timeout: timeout, targets: { cell in
            (0..<memberCount.load(ordering: .acquiring)).contains { slots[$0].ref.cell === cell }
        }) { state, limit in
            send(request(Reply(state)), state: state, timeout: limit)
        }
    }

    /// Asks every member (each gets its own request and reply) and returns the results in
    /// member order, once all have answered or failed.
    nonisolated(nonsending)
    public func askAll<Value: Sendable>(
        timeout: Duration? = nil,
        _ request: (Reply<Value>) -> Message
    ) async -> [Result<Value, AskError>] {
        let targets = refs(upTo: memberCount.load(ordering: .acquiring))
        let gather = AskGather<Value>(count: targets.count)
        return await withUnsafeContinuation { continuation in
            gather.start(continuation)
            for (index, target) in targets.enumerated() {
                target.ask(timeout: timeout, request) { gather.complete(index, $0) }
            }
        }
    }

    /// Routes a request once it is built (consistent hashing needs the message), then sends it
    /// exactly as ``ActorRef`` does: the envelope owns one retain of the ask state, which the
    /// cell gives back when it handles or dead-letters the envelope.
    private func send<Value>(_ message: consuming Message, state: AskState<Value>, timeout: Duration) {
        let index = route(message)
        slots[index].ref.sendAsk(message, state: state, timeout: timeout)
    }

    // MARK: Members

    /// The members, in member order (a growing pool may add more later).
    public var members: [ActorRef<Message>] { refs(upTo: memberCount.load(ordering: .acquiring)) }

    private func refs(upTo count: Int) -> [ActorRef<Message>] {
        (0..<count).map { slots[$0].ref }
    }

    /// The current number of members.
    public var size: Int { memberCount.load(ordering: .acquiring) }

    /// The most members the pool can have: its size, or the maximum of a growing pool.
    public var maximumSize: Int { capacity }

    /// Each member's load as the load-aware strategies see it (mailbox depth plus one while
    /// busy), in member order; `nil` for pools whose routing does not track load. Approximate
    /// while messages flow; for monitoring and tests.
    public var memberLoads: [Int]? {
        guard routing.tracksLoad else { return nil }
        return (0..<memberCount.load(ordering: .acquiring)).map { load(of: $0) }
    }

    /// Stops every member after the messages already sent to it.
    public func stop() {
        for index in 0..<memberCount.load(ordering: .acquiring) { slots[index].ref.stop() }
    }

    /// Whether every member has stopped.
    public var isStopped: Bool {
        (0..<memberCount.load(ordering: .acquiring)).allSatisfy { slots[$0].ref.isStopped }
    }

    // MARK: Routing (per message: no lock, no allocation)

    @inline(__always)
    private func route(_ message: borrowing Message) -> Int {
        let count = memberCount.load(ordering: .acquiring)
        switch strategy {
        case .roundRobin, .broadcast:
            return live(from: Int(cursor.wrappingAdd(1, ordering: .relaxed).oldValue % UInt64(count)), count: count)
        case .random:
            let value = splitMix64(cursor.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue)
            return live(from: Int(value.multipliedFullWidth(by: UInt64(count)).high), count: count)
        case .consistentHash(let hash):
            return live(from: jumpConsistentHash(hash(message), buckets: count), count: count)
        case .leastLoaded:
            let start = Int(cursor.wrappingAdd(1, ordering: .relaxed).oldValue % UInt64(count))
            return leastLoaded(from: start, count: count).index
        case .firstFreeOrGrow(let maximum):
            let (best, bestLoad) = leastLoaded(from: 0, count: count)
            if bestLoad == 0 { return best }
            if count < maximum, let added = grow() { return added }
            return best
        }
    }

    /// `start` if that member is running, else the next running one; `start` when all stopped
    /// (the send then reports the dead letter).
    @inline(__always)
    private func live(from start: Int, count: Int) -> Int {
        if _fastPath(!slots[start].ref.cell.isStopped) { return start }
        var index = start
        for _ in 1..<max(count, 1) {
            index += 1
            if index == count { index = 0 }
            if !slots[index].ref.cell.isStopped { return index }
        }
        return start
    }

    /// The least loaded running member, scanning from `start` in member order; stops at the
    /// first idle one.
    @inline(__always)
    private func leastLoaded(from start: Int, count: Int) -> (index: Int, load: Int) {
        var best = start
        var bestLoad = Int.max
        var index = start
        for _ in 0..<count {
            if !slots[index].ref.cell.isStopped {
                let load = load(of: index)
                if load == 0 { return (index, 0) }
                if load < bestLoad {
                    best = index
                    bestLoad = load
                }
            }
            index += 1
            if index == count { index = 0 }
        }
        return (best, bestLoad)
    }

    @inline(__always)
    private func load(of index: Int) -> Int {
        let depth = max(0, Int(CTroupe_mailbox_depth(slots[index].ref.cell.mailbox)))
        let busy = slots[index].load?.busy.load(ordering: .relaxed) == true ? 1 : 0
        return depth + busy
    }

    /// Adds a member unless the pool is full or another sender is adding one right now (that
    /// sender then routes to its new member and this one to the least loaded). Returns the new
    /// member's index.
    private func grow() -> Int? {
        guard growing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return nil }
        defer { growing.store(false, ordering: .releasing) }
        let count = memberCount.load(ordering: .relaxed)  // only the holder of `growing` writes it
        guard count < capacity else { return nil }
        (slots + count).initialize(to: spawnMember(count))
        memberCount.store(count + 1, ordering: .releasing)
        return count
    }
}

extension ActorPool: CustomStringConvertible {
    public var description: String { "ActorPool<\(Message.self)>(\(name), \(size) members, \(routing))" }
}

/// One member: its ref and, for load-aware routing, the busy flag it sets while handling.
struct PoolMember<Message: Sendable> {
    let ref: ActorRef<Message>
    let load: MemberLoad?
}

/// A member's busy flag: written only by the member's own turns, read by routing senders.
final class MemberLoad: Sendable {
    let busy = Atomic<Bool>(false)
    // Keeps two members' flags off one cache line (the allocation rounds up to 64 bytes).
    private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
}

/// Wraps a member's definition to publish its busy state: two relaxed stores per message.
struct LoadReportingMember<Definition: ActorDefinition & SendableMetatype>: ActorDefinition {
    typealias Message = Definition.Message
    var definition: Definition
    let load: MemberLoad

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        load.busy.store(true, ordering: .relaxed)
        defer { load.busy.store(false, ordering: .relaxed) }
        try definition.receive(message, context: context)
    }

    mutating func started(context: ActorContext<Message>) { definition.started(context: context) }
    mutating func stopped(context: ActorContext<Message>) { definition.stopped(context: context) }
    mutating func willRestart(reason: any Error, context: ActorContext<Message>) {
        definition.willRestart(reason: reason, context: context)
    }
    mutating func didRestart(reason: any Error, context: ActorContext<Message>) {
        definition.didRestart(reason: reason, context: context)
    }
}

/// Collects the answers of ``ActorPool/askAll(timeout:_:)``: `complete` from any thread (the
/// repliers'), once per index; whoever completes the last one (or `start`, if all came first)
/// resumes the continuation, outside the mutex.
private final class AskGather<Value: Sendable>: Sendable {
    private struct State {
        var results: [Result<Value, AskError>?]
        var remaining: Int
        var continuation: UnsafeContinuation<[Result<Value, AskError>], Never>?
    }

    private let state: Locked<State>

    init(count: Int) {
        state = Locked(State(results: Array(repeating: nil, count: count), remaining: count, continuation: nil))
    }

    func start(_ continuation: UnsafeContinuation<[Result<Value, AskError>], Never>) {
        let done: [Result<Value, AskError>]? = state.withLock { state in
            if state.remaining == 0 { return state.results.map { $0! } }
            state.continuation = continuation
            return nil
        }
        if let done { continuation.resume(returning: done) }
    }

    func complete(_ index: Int, _ result: Result<Value, AskError>) {
        let finished: (UnsafeContinuation<[Result<Value, AskError>], Never>, [Result<Value, AskError>])? = state.withLock { state in
            guard state.results[index] == nil else { return nil }
            state.results[index] = result
            state.remaining -= 1
            guard state.remaining == 0, let continuation = state.continuation else { return nil }
            state.continuation = nil
            return (continuation, state.results.map { $0! })
        }
        if let (continuation, results) = finished { continuation.resume(returning: results) }
    }
}

// MARK: Spawning

extension ActorSystem {
    /// Spawns a pool of `size` members made by `member(index)` (also called again to restart
    /// a member after a failure, and to add members to a growing pool).
    ///
    /// `options` applies to every member, each named `name-index`; the load-aware routings
    /// switch on ``SpawnOptions/tracksMailboxDepth``. Fails with ``PoolError`` for a size below
    /// 1 or a growth maximum below the size.
    public func spawnPool<Definition: ActorDefinition & SendableMetatype>(
        size: Int,
        routing: PoolRouting<Definition.Message> = .roundRobin,
        name: String? = nil,
        options: SpawnOptions = .default,
        member: @escaping @Sendable (Int) -> Definition
    ) throws(PoolError) -> ActorPool<Definition.Message> {
        let poolName = name ?? options.name ?? String(describing: Definition.self)
        let spawner = Self.memberSpawner(system: self, poolName: poolName, options: options,
                                         tracksLoad: routing.tracksLoad, member: member)
        return try ActorPool(name: poolName, system: self, size: size, routing: routing, spawnMember: spawner)
    }

    /// Spawns a pool whose members start from `make()` and are then set up by
    /// `configure(&member, index)` (ActorKit's per-member configuration block).
    public func spawnPool<Definition: ActorDefinition & SendableMetatype>(
        size: Int,
        routing: PoolRouting<Definition.Message> = .roundRobin,
        name: String? = nil,
        options: SpawnOptions = .default,
        of make: @escaping @Sendable () -> Definition,
        configure: @escaping @Sendable (inout Definition, Int) -> Void
    ) throws(PoolError) -> ActorPool<Definition.Message> {
        try spawnPool(size: size, routing: routing, name: name, options: options, member: configuredMember(make, configure))
    }

    /// Spawns a pool of actors with per-type handlers.
    public func spawnPool<Actor: HandlerActor>(
        size: Int,
        routing: PoolRouting<AnyMessage> = .roundRobin,
        name: String? = nil,
        options: SpawnOptions = .default,
        member: @escaping @Sendable (Int) -> Actor
    ) throws(PoolError) -> ActorPool<AnyMessage> {
        try spawnPool(size: size, routing: routing, name: name ?? String(describing: Actor.self), options: options) { index in
            HandlerHost(member(index))
        }
    }

    /// Spawns a pool of actors with per-type handlers, each made by `make()` and set up by
    /// `configure(&member, index)`.
    public func spawnPool<Actor: HandlerActor>(
        size: Int,
        routing: PoolRouting<AnyMessage> = .roundRobin,
        name: String? = nil,
        options: SpawnOptions = .default,
        of make: @escaping @Sendable () -> Actor,
        configure: @escaping @Sendable (inout Actor, Int) -> Void
    ) throws(PoolError) -> ActorPool<AnyMessage> {
        try spawnPool(size: size, routing: routing, name: name, options: options, member: configuredMember(make, configure))
    }

    static func memberSpawner<Definition: ActorDefinition & SendableMetatype>(
        system: ActorSystem, poolName: String, options: SpawnOptions, tracksLoad: Bool,
        member: @escaping @Sendable (Int) -> Definition
    ) -> @Sendable (Int) -> PoolMember<Definition.Message> {
        { [system] index in
            var memberOptions = options
            memberOptions.name = "\(poolName)-\(index)"
            guard tracksLoad else {
                return PoolMember(ref: system.spawn(options: memberOptions) { member(index) }, load: nil)
            }
            memberOptions.tracksMailboxDepth = true
            let load = MemberLoad()
            let ref = system.spawn(options: memberOptions) { LoadReportingMember(definition: member(index), load: load) }
            return PoolMember(ref: ref, load: load)
        }
    }
}

// MARK: Per-type handler pools

extension ActorPool where Message == AnyMessage {
    /// Sends any value to every member.
    @discardableResult
    public func broadcast<Payload: Sendable>(_ payload: Payload) -> Int {
        broadcast(AnyMessage(payload: payload, reply: nil))
    }

    /// Sends any value to every member and returns their answers in member order.
    nonisolated(nonsending)
    public func askAll<Payload: Sendable, Value: Sendable>(
        _ payload: Payload,
        returning: Value.Type = Value.self,
        timeout: Duration? = nil
    ) async -> [Result<Value, AskError>] {
        await askAll(timeout: timeout) { (reply: Reply<Value>) in AnyMessage.request(payload, reply) }
    }
}

/// A member closure from ActorKit's pair of blocks: make a member, then configure it with its
/// index. Shared by the `of:configure:` forms of ``ActorSystem/spawnPool(size:routing:name:options:member:)``
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
