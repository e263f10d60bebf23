#if canImport(Glibc)
    import Glibc
#endif
import Troupe
import TroupeTestSupport
import TroupeVirtualActors

/// What every activation of a ``Tally`` did, shared by the test: activations, stops, and every
/// message handled, with the activation that handled it.
final class TallyLog: Sendable {
    struct Handled: Sendable, Hashable {
        let key: String
        let sender: Int
        let sequence: Int
    }

    /// How long each activation's `stopped` hook blocks its worker (slow stops).
    let stopPause: Duration
    let started = Recorder<String>()
    let stopped = Recorder<String>()
    let handled = Recorder<Handled>()
    /// Activations of one key alive at once, and the most ever seen (single activation: 1).
    /// A TestLock, not a Mutex: TSan does not see Synchronization's Mutex as synchronization.
    private let live = TestLock<(now: [String: Int], most: Int)>(([:], 0))

    func activationStarted(_ key: String) {
        started.append(key)
        live.withLock { live in
            live.now[key, default: 0] += 1
            live.most = max(live.most, live.now[key]!)
        }
    }

    func activationStopped(_ key: String) {
        if stopPause > .zero { usleep(UInt32(stopPause / .microseconds(1))) }
        stopped.append(key)
        live.withLock { $0.now[key, default: 0] -= 1 }
    }

    init(stopPause: Duration = .zero) { self.stopPause = stopPause }

    var mostConcurrentActivationsOfOneKey: Int { live.withLock { $0.most } }
}

/// An entity that sums what it is sent (its state is lost on passivation: it is not durable)
/// and reports its lifecycle to a ``TallyLog``.
struct Tally: ActorDefinition {
    enum Message: Sendable {
        case add(Int)
        case numbered(sender: Int, sequence: Int)
        case total(Reply<Int>)
        case identity(Reply<EntityID>)
        case stopYourself
        case fail
    }

    struct Failure: Error {}

    let id: EntityID
    let log: TallyLog
    var sum = 0

    init(id: EntityID, log: TallyLog) {
        self.id = id
        self.log = log
    }

    func started(context: ActorContext<Message>) { log.activationStarted(id.key) }
    func stopped(context: ActorContext<Message>) { log.activationStopped(id.key) }

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        switch message {
        case .add(let n): sum += n
        case .numbered(let sender, let sequence):
            log.handled.append(.init(key: id.key, sender: sender, sequence: sequence))
        case .total(let reply): reply.succeed(sum)
        case .identity(let reply): reply.succeed(id)
        case .stopYourself: context.stop()
        case .fail: throw Failure()
        }
    }
}

func tallies(
    _ system: ActorSystem, log: TallyLog, name: String = "tally", idleTimeout: Duration? = nil,
    activeLimit: Int? = nil
) throws -> EntityRegion<Tally.Message> {
    try EntityRegion(
        system: system,
        kind: EntityKind(name, idleTimeout: idleTimeout, activeLimit: activeLimit) { id in Tally(id: id, log: log) })
}

/// A region held weakly, for a factory that uses its own region: a strong capture is a cycle
/// (region → factory → region) that keeps the region, and its system, alive for ever.
final class WeakRegion: Sendable {
    private struct Reference { weak var region: EntityRegion<Tally.Message>? }
    private let storage = TestLock(Reference())

    var region: EntityRegion<Tally.Message>? {
        get { storage.withLock { $0.region } }
        set { storage.withLock { $0.region = newValue } }
    }
}
