import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// `HandlerActor`: per-type handlers with void, result and future reactions, unhandled types,
/// reply type checks.
@Suite struct HandlerActorTests {
    @Test func voidHandlerChangesStateAndAnswersAnAskWithVoid() async throws {
        try await withTestSystem { system in
            let account = system.spawn(Account())
            #expect(account.tell(Deposit(amount: 5)) == .enqueued)
            try await account.ask(Deposit(amount: 10), returning: Void.self)
            let value1 = try await account.ask(Balance(), returning: Int.self)
            #expect(value1 == 15)
        }
    }

    @Test func resultHandlerAnswersWithItsReturnValue() async throws {
        try await withTestSystem { system in
            let account = system.spawn(Account())
            account.tell(Deposit(amount: 3))
            let balance: Int = try await account.ask(Balance())
            #expect(balance == 3)
            let text: String = try await account.ask(Describe())
            #expect(text == "balance 3")
        }
    }

    @Test func futureHandlerAnswersLater() async throws {
        try await withTestSystem { system in
            let account = system.spawn(Account())
            account.tell(Deposit(amount: 4))
            // The future handler asks a helper actor and answers when that answer arrives.
            let audited: String = try await account.ask(Audit(), timeout: .seconds(30))
            #expect(audited == "audited 4")
        }
    }

    @Test func futureHandlerDroppingItsReplyFailsWithNoReply() async throws {
        try await withTestSystem { system in
            let account = system.spawn(Account())
            let result = await askResult { try await account.ask(Forget(), returning: Int.self, timeout: .seconds(30)) }
            #expect(result.askError?.kind == .noReply)
        }
    }

    @Test func futureHandlerFailingItsReplyFailsTheAsk() async throws {
        try await withTestSystem { system in
            let account = system.spawn(Account())
            let result = await askResult { try await account.ask(Refuse(), returning: Int.self) }
            guard case .failure(.failed(let error)) = result else {
                Issue.record("expected .failed, got \(result)")
                return
            }
            #expect((error as? TestError) == TestError("refused"))
        }
    }

    @Test func unhandledTypeIsDeadLetteredWithItsTypeName() async throws {
        try await withTestSystem { system in
            let letters = Recorder<DeadLetter>()
            system.deadLetters.observe { letters.append($0) }
            let account = system.spawn(Account())
            // Accepted by the mailbox (any Sendable goes), dead-lettered by the actor.
            #expect(account.tell(Unknown(code: 7)) == .enqueued)
            await waitUntil("dead letter recorded") { letters.count == 1 }
            let letter = letters.values[0]
            #expect(letter.reason == .unhandledMessageType("\(Unknown.self)"))
            #expect(letter.reason.kind == .unhandledMessageType)
            #expect((letter.message as? Unknown)?.code == 7)
            #expect(letter.recipient == account.address)
            #expect(system.deadLetters.count(.unhandledMessageType) == 1)
            // The actor is unaffected.
            let value2 = try await account.ask(Balance(), returning: Int.self)
            #expect(value2 == 0)
        }
    }

    @Test func askWithAnUnhandledTypeFailsWithUndeliverable() async throws {
        try await withTestSystem { system in
            let account = system.spawn(Account())
            let result = await askResult {
                try await account.ask(Unknown(code: 1), returning: Int.self, timeout: .seconds(30))
            }
            guard case .failure(.undeliverable(let reason)) = result else {
                Issue.record("expected .undeliverable, got \(result)")
                return
            }
            #expect(reason == .unhandledMessageType("\(Unknown.self)"))
            #expect(system.deadLetters.count(.unhandledMessageType) == 1)
        }
    }

    @Test func askExpectingAnotherTypeFailsWithTypeMismatch() async throws {
        try await withTestSystem { system in
            let account = system.spawn(Account())
            let result = await askResult { try await account.ask(Balance(), returning: String.self) }
            guard case .failure(.typeMismatch(let expected, let actual)) = result else {
                Issue.record("expected .typeMismatch, got \(result)")
                return
            }
            #expect(expected == "String")
            #expect(actual == "Int")
        }
    }

    @Test func askOfAVoidHandlerExpectingAValueFailsWithTypeMismatch() async throws {
        try await withTestSystem { system in
            let account = system.spawn(Account())
            let result = await askResult { try await account.ask(Deposit(amount: 1), returning: Int.self) }
            guard case .failure(.typeMismatch(let expected, _)) = result else {
                Issue.record("expected .typeMismatch, got \(result)")
                return
            }
            #expect(expected == "Int")
            // The handler still ran.
            let value3 = try await account.ask(Balance(), returning: Int.self)
            #expect(value3 == 1)
        }
    }

    @Test func futureHandlerAnswerOfTheWrongTypeFailsWithTypeMismatch() async throws {
        try await withTestSystem { system in
            let account = system.spawn(Account())
            let result = await askResult { try await account.ask(Audit(), returning: Int.self) }
            guard case .failure(.typeMismatch(let expected, let actual)) = result else {
                Issue.record("expected .typeMismatch, got \(result)")
                return
            }
            #expect(expected == "Int")
            #expect(actual == "String")
        }
    }

    @Test func throwingHandlerFailsTheAskWithItsErrorAndStopsTheActor() async throws {
        try await withTestSystem { system in
            let account = system.spawn(Account())
            let result = await askResult {
                try await account.ask(Withdraw(amount: 100), returning: Int.self, timeout: .seconds(30))
            }
            guard case .failure(.failed(let error)) = result else {
                Issue.record("expected .failed, got \(result)")
                return
            }
            #expect((error as? TestError) == TestError("insufficient funds"))
            await waitUntil("stopped by the default directive") { account.isStopped }
        }
    }

    @Test func startedAndStoppedHooksRunAroundTheHandlers() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let account = system.spawn(Account(events: events))
            account.tell(Deposit(amount: 1))
            account.stop()
            await waitUntil("stopped hook ran") { events.values.last == "stopped" }
            #expect(events.values == ["setup", "started", "deposit", "stopped"])
        }
    }

    @Test func restartedHandlerActorRunsSetupAgainWithFreshState() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let account = system.spawn(options: SpawnOptions(failureDecider: { _ in .restart })) {
                Account(events: events)
            }
            account.tell(Deposit(amount: 50))
            let result = await askResult { try await account.ask(Withdraw(amount: 80), returning: Int.self) }
            #expect(result.askError?.kind == .failed)
            // Fresh instance: balance back to 0, handlers registered again.
            let value4 = try await account.ask(Balance(), returning: Int.self)
            #expect(value4 == 0)
            #expect(!account.isStopped)
            #expect(events.values.filter { $0 == "setup" }.count == 2)
        }
    }

    @Test func handlerActorCanSpawnHandlerActorChildren() async throws {
        try await withTestSystem { system in
            let parent = system.spawn(Account())
            let child: ActorRef<AnyMessage> = try await parent.ask(SpawnChild())
            child.tell(Deposit(amount: 9))
            let value5 = try await child.ask(Balance(), returning: Int.self)
            #expect(value5 == 9)
            parent.stop()
            await waitUntil("child stops with its parent") { child.isStopped }
        }
    }

    @Test func anyMessageBuiltByHandIsDispatchedOnItsPayloadType() async throws {
        try await withTestSystem { system in
            let account = system.spawn(Account())
            let message = AnyMessage(Deposit(amount: 2))
            #expect(message.payload is Deposit)
            // `tell(_: Message)` (not the generic payload overload) sends it unwrapped.
            #expect(account.tell(message) == .enqueued)
            let value6 = try await account.ask(Balance(), returning: Int.self)
            #expect(value6 == 2)
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func registeringTwoHandlersForOneTypeIsAProgrammingError() async {
        await #expect(processExitsWith: .failure) {
            let system = ActorSystem(configuration: .init(workerCount: 1, pinWorkers: false))
            let actor = system.spawn(DuplicateHandlers())
            // The first turn runs `setup`, which traps; this ask never returns.
            _ = try? await actor.ask(Balance(), returning: Int.self, timeout: .seconds(30))
        }
    }
}

// MARK: - Test messages and actors

struct Deposit: Sendable { let amount: Int }
struct Withdraw: Sendable { let amount: Int }
struct Balance: Sendable {}
struct Describe: Sendable {}
struct Audit: Sendable {}
struct Forget: Sendable {}
struct Refuse: Sendable {}
struct Unknown: Sendable { let code: Int }
struct SpawnChild: Sendable {}

struct Auditor: ActorDefinition {
    enum Message: Sendable { case audit(Int, Reply<String>) }
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .audit(let balance, let reply): reply.succeed("audited \(balance)")
        }
    }
}

struct Account: HandlerActor {
    var balance = 0
    var events: Recorder<String>?
    var auditor: ActorRef<Auditor.Message>?

    init(events: Recorder<String>? = nil) { self.events = events }

    mutating func setup(_ on: inout MessageHandlers<Account>) {
        events?.append("setup")
        on.void(Deposit.self) { account, deposit, _ in
            account.balance += deposit.amount
            account.events?.append("deposit")
        }
        on.result(Withdraw.self) { account, withdraw, _ in
            guard withdraw.amount <= account.balance else { throw TestError("insufficient funds") }
            account.balance -= withdraw.amount
            return account.balance
        }
        on.result(Balance.self) { account, _, _ in account.balance }
        on.result(Describe.self) { account, _, _ in "balance \(account.balance)" }
        on.future(Audit.self, replying: String.self) { account, _, context, reply in
            let auditor = account.auditor ?? context.spawn(Auditor())
            account.auditor = auditor
            auditor.ask(timeout: .seconds(30), { Auditor.Message.audit(account.balance, $0) }) { result in
                switch result {
                case .success(let text): reply.succeed(text)
                case .failure(let error): reply.fail(error)
                }
            }
        }
        on.future(Forget.self, replying: Int.self) { _, _, _, _ in }
        on.future(Refuse.self, replying: Int.self) { _, _, _, reply in reply.fail(TestError("refused")) }
        on.result(SpawnChild.self) { _, _, context in context.spawn(Account()) }
    }

    mutating func started(context: ActorContext<AnyMessage>) { events?.append("started") }
    mutating func stopped(context: ActorContext<AnyMessage>) { events?.append("stopped") }
}

struct DuplicateHandlers: HandlerActor {
    func setup(_ on: inout MessageHandlers<DuplicateHandlers>) {
        on.result(Balance.self) { _, _, _ in 1 }
        on.result(Balance.self) { _, _, _ in 2 }
    }
}
