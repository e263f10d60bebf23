import Testing
import Troupe
import TroupeTestSupport
import TroupeTesting

/// A check-then-act race between actors, found by exploring schedules and replayed by its seed.
@Suite struct ExplorationTests {
    /// An account that trusts its callers to check the balance first (the bug).
    struct Account: ActorDefinition {
        enum Message: Sendable {
            case balance(Reply<Int>)
            case debit(Int)
        }
        var balance: Int
        mutating func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .balance(let reply): reply.succeed(balance)
            case .debit(let amount): balance -= amount
            }
        }
    }

    /// Checks the balance, then debits: two messages, with room for another teller in between.
    struct Teller: ActorDefinition {
        enum Message: Sendable {
            case withdraw(Int)
            case checked(Int, Result<Int, AskError>)
        }
        let account: ActorRef<Account.Message>
        func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .withdraw(let amount):
                context.ask(account, { .balance($0) }) { .checked(amount, $0) }
            case .checked(let amount, let balance):
                if let balance = try? balance.get(), balance >= amount { account.tell(.debit(amount)) }
            }
        }
    }

    /// Two tellers withdraw 80 each from 100: the account must never go below zero.
    static func scenario(_ system: DeterministicSystem) throws {
        let account = system.spawn(Account(balance: 100))
        let first = system.spawn(Teller(account: account))
        let second = system.spawn(Teller(account: account))
        first.tell(.withdraw(80))
        second.tell(.withdraw(80))
        system.runUntilIdle()
        let balance = try system.ask(account) { .balance($0) }
        try require(balance >= 0, "overdrawn: balance \(balance)")
    }

    @Test func exploreFindsTheRaceAndItsSeedReplaysIt() throws {
        let found = explore(seeds: 0..<1_000) { try Self.scenario($0) }
        let failure = try #require(found.failure, "no schedule overdrew the account: \(found)")
        #expect(found.schedulesRun <= 1_000)
        #expect(failure.error.contains("overdrawn: balance -60"))
        #expect("\(found)".contains("seed \(failure.seed) failed"))
        // The failing seed replays the same failure, with the same steps, 100 times out of 100.
        var replayed = 0
        for _ in 0..<100 {
            let again = explore(seeds: [failure.seed]) { try Self.scenario($0) }
            if let repeatFailure = again.failure, repeatFailure.error == failure.error,
                repeatFailure.trace.map(\.actor) == failure.trace.map(\.actor)
            {
                replayed += 1
            }
        }
        #expect(replayed == 100)
    }

    @Test func aCorrectScenarioPassesEverySchedule() {
        let found = explore(seeds: 0..<200) { system in
            let counter = system.spawn(Counter())
            for amount in 1...5 { counter.tell(.add(amount)) }
            system.runUntilIdle()
            try require(try system.ask(counter) { .get($0) } == 15)
        }
        #expect(found.failure == nil)
        #expect(found.schedulesRun == 200)
        #expect("\(found)" == "all 200 schedules passed")
    }
}
