import Troupe
import TroupePersistence

/// The durable actor most tests use: a bank account.
struct Account: EventSourcedActor {
    enum Command: Sendable {
        case deposit(Int, Reply<Int>)
        /// Persists several events at once (atomically).
        case depositEach([Int], Reply<Int>)
        case withdraw(Int, Reply<Int>)
        case balance(Reply<Int>)
        case history(Reply<[Int]>)
        case close(Reply<Int>)
    }
    enum Event: Codable, Sendable, Equatable {
        case deposited(Int)
        case withdrew(Int)
        case closed
    }
    struct State: Codable, Sendable, Equatable {
        var balance = 0
        var amounts: [Int] = []
        var closed = false
    }
    struct Overdrawn: Error {}

    let persistenceID: PersistenceID
    var emptyState: State { State() }
    static let eventCodec = PersistenceCodec<Event>.json(typeName: "account-event")

    func handle(_ command: Command, state: State, context: EventSourcedContext<Self>) -> Effect<Self> {
        switch command {
        case .deposit(let amount, let reply):
            return .persist(.deposited(amount)).thenReply(reply) { $0.balance }
        case .depositEach(let amounts, let reply):
            return .persist(amounts.map { .deposited($0) }).thenReply(reply) { $0.balance }
        case .withdraw(let amount, let reply):
            guard amount <= state.balance else {
                reply.fail(Overdrawn())
                return .none
            }
            return .persist(.withdrew(amount)).thenReply(reply) { $0.balance }
        case .balance(let reply):
            return .reply(reply, state.balance)
        case .history(let reply):
            return .reply(reply, state.amounts)
        case .close(let reply):
            return .persist(.closed).thenReply(reply) { $0.balance }.thenStop()
        }
    }

    func apply(_ event: Event, to state: inout State) {
        switch event {
        case .deposited(let amount):
            state.balance += amount
            state.amounts.append(amount)
        case .withdrew(let amount):
            state.balance -= amount
            state.amounts.append(-amount)
        case .closed: state.closed = true
        }
    }
}

/// The same account, snapshotting every 3 events and keeping 2.
struct SnapshottingAccount: EventSourcedActor {
    typealias Command = Account.Command
    typealias Event = Account.Event
    typealias State = Account.State
    let inner: Account
    var persistenceID: PersistenceID { inner.persistenceID }
    var emptyState: State { State() }
    static var eventCodec: PersistenceCodec<Event> { Account.eventCodec }
    static var snapshots: SnapshotPolicy<State> { .every(3, keep: 2, typeName: "account-state") }
    func handle(_ command: Command, state: State, context: EventSourcedContext<Self>) -> Effect<Self> {
        switch command {
        case .deposit(let amount, let reply): .persist(.deposited(amount)).thenReply(reply) { $0.balance }
        case .balance(let reply): .reply(reply, state.balance)
        case .history(let reply): .reply(reply, state.amounts)
        default: .none
        }
    }
    func apply(_ event: Event, to state: inout State) { inner.apply(event, to: &state) }
}
