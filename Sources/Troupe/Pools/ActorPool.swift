internal import TroupeLocks
import Synchronization
internal import CTroupe

/// A ref-like front for several actors of one definition (its members): each message goes to
/// one member chosen by the pool's ``PoolRouting``, or to all of them with `broadcast(_:)`.
/// A pool lets slow work (network calls) proceed several messages
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
public final class ActorPool<Message: Sendable>: @unchecked Sendable {  // slots published by `memberCount`
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

    init(
        name: String, system: ActorSystem, size: Int, routing: PoolRouting<Message>,
        spawnMember: @escaping @Sendable (Int) -> PoolMember<Message>
    ) throws(PoolError) {
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
    /// Inlinable like it, so that the ask's types come from the caller's metadata caches.
    @inlinable
    nonisolated(nonsending)
        public func ask<Value: Sendable>(
            timeout: Duration? = nil,
            _ request: (Reply<Value>) -> Message
        ) async throws(AskError) -> Value
    {
        try await Asking.await(system, timeout: timeout) { state in
            send(request(Reply(state)), state: state)
        }
    }

    /// Sends a request and calls `onReply` exactly once with the answer or the error, on the
    /// thread that completes the ask.
    public func ask<Value: Sendable>(
        timeout: Duration? = nil,
        _ request: (Reply<Value>) -> Message,
        onReply: @escaping @Sendable (Result<Value, AskError>) -> Void
    ) {
        Asking.callback(system, timeout: timeout, onReply: onReply) { state in
            send(request(Reply(state)), state: state)
        }
    }

    /// ``ask(timeout:_:)`` that blocks the calling thread, for callers outside the runtime and
    /// dedicated-thread actors. On a shared worker thread, or from a member of this pool on its
    /// dedicated thread, it fails at once with ``AskError/blockingOnWorkerThread``.
    public func askBlocking<Value: Sendable>(
        timeout: Duration? = nil,
        _ request: (Reply<Value>) -> Message
    ) throws(AskError) -> Value {
        try Asking.blocking(
            system, timeout: timeout,
            targets: { cell in
                (0..<memberCount.load(ordering: .acquiring)).contains { slots[$0].ref.cell === cell }
            }
        ) { state in
            send(request(Reply(state)), state: state)
        }
    }

    /// Asks every member (each gets its own request and reply) and returns the results in
    /// member order, once all have answered or failed.
    nonisolated(nonsending)
        public func askAll<Value: Sendable>(
            timeout: Duration? = nil,
            _ request: (Reply<Value>) -> Message
        ) async -> [Result<Value, AskError>]
    {
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
    @usableFromInline
    func send<Value>(_ message: consuming Message, state: AskState<Value>) {
        let index = route(message)
        slots[index].ref.sendAsk(message, state: state)
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
        guard growing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            return nil
        }
        defer { growing.store(false, ordering: .releasing) }
        let count = memberCount.load(ordering: .relaxed)  // only the holder of `growing` writes it
        guard count < capacity else { return nil }
        (slots + count).initialize(to: spawnMember(count))
        memberCount.store(count + 1, ordering: .releasing)
        return count
    }
}
