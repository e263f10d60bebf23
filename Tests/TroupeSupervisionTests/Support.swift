import Troupe
import TroupeSupervision
import TroupeTestSupport

/// The error the test actors fail with.
struct Boom: Error, Equatable, CustomStringConvertible {
    let tag: String
    init(_ tag: String) { self.tag = tag }
    var description: String { "Boom(\(tag))" }
}

/// Everything the instances of one supervised child report: shared by all its instances, so
/// it survives restarts.
final class Journal: Sendable {
    /// Instances created so far; instance numbers start at 1.
    let instances = AtomicCounter()
    /// Lifecycle hooks, in order: "started#1", "willRestart#1 Boom(x)", "didRestart#2 Boom(x)", …
    let log = Recorder<String>()
    /// Every `.work` value handled, by any instance, in order.
    let handled = Recorder<Int>()
    /// When `.failTimed` messages failed, and when fresh instances ran `didRestart`, on the
    /// system's clock (`ActorSystem.uptime`: virtual time on a deterministic system).
    let failureTimes = Recorder<Duration>()
    let restartTimes = Recorder<Duration>()

    var restarts: Int { log.values.filter { $0.hasPrefix("didRestart") }.count }
}

/// The general test actor: handles work, fails on demand (throwing or with `context.crash`),
/// can be held at a gate, and reports its lifecycle to its ``Journal``.
struct Worker: ActorDefinition {
    enum Message: Sendable {
        case work(Int)
        case fail(String)
        case crash(String)
        /// Fails with a timestamp in the journal.
        case failTimed(String)
        /// Fails unless this instance has handled nothing yet (so a retry on a fresh instance
        /// succeeds); handled like `.work` when it succeeds.
        case failUnlessFresh(Int)
        /// Waits at the gate, then returns.
        case hold(Gate)
        /// Waits at the gate, then fails.
        case holdThenFail(Gate, String)
        case state(Reply<WorkerState>)
    }

    let journal: Journal
    let instance: Int
    var handled: [Int] = []

    init(_ journal: Journal) {
        self.journal = journal
        instance = journal.instances.increment()
    }

    mutating func started(context: ActorContext<Message>) { journal.log.append("started#\(instance)") }

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        switch message {
        case .work(let value):
            handled.append(value)
            journal.handled.append(value)
        case .fail(let tag):
            throw Boom(tag)
        case .crash(let tag):
            context.crash(Boom(tag))
        case .failTimed(let tag):
            journal.failureTimes.append(context.system.uptime)
            throw Boom(tag)
        case .failUnlessFresh(let value):
            guard handled.isEmpty else { throw Boom("not fresh") }
            handled.append(value)
            journal.handled.append(value)
        case .hold(let gate):
            gate.enter()
        case .holdThenFail(let gate, let tag):
            gate.enter()
            throw Boom(tag)
        case .state(let reply):
            reply.succeed(WorkerState(instance: instance, handled: handled))
        }
    }

    mutating func willRestart(reason: any Error, context: ActorContext<Message>) {
        journal.log.append("willRestart#\(instance) \(reason)")
    }

    mutating func didRestart(reason: any Error, context: ActorContext<Message>) {
        journal.restartTimes.append(context.system.uptime)
        journal.log.append("didRestart#\(instance) \(reason)")
        started(context: context)
    }

    mutating func stopped(context: ActorContext<Message>) { journal.log.append("stopped#\(instance)") }
}

struct WorkerState: Sendable, Equatable {
    let instance: Int
    let handled: [Int]
}

extension ActorRef where Message == Worker.Message {
    /// The current instance's number and handled values (the ask is handled after everything
    /// sent before it).
    func state() async throws -> WorkerState { try await ask { .state($0) } }
}

/// Collects a supervisor's events as "id kind" lines (and the events themselves).
final class EventLog: Sendable {
    let events = Recorder<SupervisionEvent>()

    init(_ supervisor: Supervisor) {
        supervisor.observe { [events] in events.append($0) }
    }

    var lines: [String] { events.values.map { "\($0.id) \($0.kind)" } }

    func lines(for id: String) -> [String] { events.values.filter { $0.id == id }.map { "\($0.kind)" } }

    var count: Int { events.count }

    /// The backoff delays of the `restarted` events, in order.
    var restartDelays: [Duration] {
        events.values.compactMap { event in
            if case .restarted(_, let delay) = event.kind { return delay }
            return nil
        }
    }
}

/// A per-type handler actor for the `HandlerActor` overloads.
struct Tally: HandlerActor {
    struct Add: Sendable { let amount: Int }
    struct Total: Sendable {}
    struct Explode: Sendable {}

    let instances: AtomicCounter
    let instance: Int
    var total = 0

    init(instances: AtomicCounter) {
        self.instances = instances
        instance = instances.increment()
    }

    func setup(_ on: inout MessageHandlers<Tally>) {
        on.void(Add.self) { tally, add, _ in tally.total += add.amount }
        on.result(Total.self) { tally, _, _ in tally.total }
        on.void(Explode.self) { _, _, _ in throw Boom("tally") }
    }
}

extension Supervisor {
    /// Supervises a ``Worker`` whose instances share one journal (a creation closure that
    /// made its own journal would hide the restarts).
    @discardableResult
    func superviseWorker(
        id: String, journal: Journal = Journal(), options: SpawnOptions = .default,
        policy: ChildPolicy = .inherited
    ) throws(SupervisionError) -> ActorRef<Worker.Message> {
        try supervise(id: id, options: options, policy: policy) { Worker(journal) }
    }
}
