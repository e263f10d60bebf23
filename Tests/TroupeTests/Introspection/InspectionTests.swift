import Testing
import Troupe
import TroupeTestSupport

/// `describeActor(id:timeout:)` and `sendTestMessage(toActor:text:)`: an ``InspectableActor``
/// describes itself on the actor, after what its mailbox held; its definition decides which
/// texts make test messages; every other case is a typed error.
@Suite struct InspectionTests {
    @Test func anInspectableActorDescribesItselfAfterItsMailboxAndTakesTestMessages() async throws {
        try await withTestSystem { system in
            let ledger = system.spawn(Ledger(), options: SpawnOptions(name: "ledger"))
            for amount in 1...4 { ledger.tell(.add(amount)) }
            let id = ledger.address.id
            let before = try await system.describeActor(id: id)
            #expect(before == "4 entries, 10 in total")

            let told = try system.sendTestMessage(toActor: id, text: "add 32")
            #expect(told == .enqueued)
            let after = try await system.describeActor(id: id)
            #expect(after == "5 entries, 42 in total")
            #expect(throws: ActorInspectionError.testMessageRefused(type: String(reflecting: Ledger.self))) {
                try system.sendTestMessage(toActor: id, text: "drop table")
            }
            #expect(try await ledger.ask { .total($0) } == 42, "a refused text sent nothing")

            let snapshot = system.snapshot().actors
            #expect(snapshot.first { $0.address.id == id }?.isInspectable == true)
        }
    }

    @Test func whatCannotBeInspectedIsATypedError() async throws {
        try await withTestSystem { system in
            let counter = system.spawn(Counter())
            let type = String(reflecting: Counter.self)
            await #expect(throws: ActorInspectionError.notInspectable(type: type)) {
                try await system.describeActor(id: counter.address.id)
            }
            #expect(throws: ActorInspectionError.notInspectable(type: type)) {
                try system.sendTestMessage(toActor: counter.address.id, text: "add 1")
            }
            #expect(system.snapshot().actors.first { $0.address.id == counter.address.id }?.isInspectable == false)
            await #expect(throws: ActorInspectionError.noSuchActor(id: 987_654_321)) {
                try await system.describeActor(id: 987_654_321)
            }
            #expect(throws: ActorInspectionError.noSuchActor(id: 987_654_321)) {
                try system.sendTestMessage(toActor: 987_654_321, text: "add 1")
            }
            #expect(ActorInspectionError.notInspectable(type: "X").description.contains("conform it"))
        }
    }

    @Test func aBusyActorTimesOutAndOneThatStopsFirstSaysSo() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let ledger = system.spawn(Ledger(gate: gate))
            let id = ledger.address.id
            ledger.tell(.wait)
            #expect(await waitUntil("the handler waits at the gate") { gate.entered == 1 })
            await #expect(throws: ActorInspectionError.timedOut(id: id, after: .milliseconds(100))) {
                try await system.describeActor(id: id, timeout: .milliseconds(100))
            }
            // Asked while it is busy; it stops itself at the end of that handler.
            ledger.tell(.stopItself)
            let asked = Task { () throws(ActorInspectionError) -> String in
                try await system.describeActor(id: id, timeout: .seconds(30))
            }
            try await Task.sleep(for: .milliseconds(50))
            gate.open()
            let result = await asked.result
            // The request may have been answered before the stop (system messages come first),
            // or dropped by the stop: never left hanging, and never anything else.
            switch result {
            case .success(let text): #expect(text == "0 entries, 0 in total")
            case .failure(let error): #expect(error as? ActorInspectionError == .stopped(id: id))
            }
        }
    }
}

/// A ledger of amounts that describes itself and takes `add N` as a test message.
private struct Ledger: InspectableActor {
    enum Message: Sendable {
        case add(Int)
        case total(Reply<Int>)
        case wait
        case stopItself
    }

    var entries: [Int] = []
    var gate: Gate?

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .add(let amount): entries.append(amount)
        case .total(let reply): reply.succeed(entries.reduce(0, +))
        case .wait: _ = gate?.enter()
        case .stopItself: context.stop()
        }
    }

    func inspectionDescription() -> String { "\(entries.count) entries, \(entries.reduce(0, +)) in total" }

    static func testMessage(from text: String) -> Message? {
        guard text.hasPrefix("add "), let amount = Int(text.dropFirst(4)) else { return nil }
        return .add(amount)
    }
}
