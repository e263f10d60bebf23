import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Self-invalidating actors: they stop by themselves once no reference remains and their
/// mailbox is empty, running their cleanup hook on the actor first.
@Suite struct SelfInvalidationTests {
    @Test func droppingTheLastRefStopsTheActorAfterItsPendingMessages() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let gate = Gate()
            let terminated = Recorder<String>()
            spawnAndForget(system, events: events, gate: gate, terminated: terminated)
            await waitUntil("blocked with messages pending") { gate.entered == 1 }
            #expect(system.liveActorCount == 1)
            gate.open()
            await waitUntil("invalidated") { terminated.count == 1 }
            #expect(events.values == ["handled 1", "handled 2", "handled 3", "cleanup self-invalidated"])
            #expect(terminated.values == ["self-invalidated"])
            await waitUntil("no longer a live actor") { system.liveActorCount == 0 }
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func aRefHeldAnywhereKeepsTheActorAlive() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let holder = RefHolder()
            do {
                let ref = system.spawn(Resource(events: events), options: SpawnOptions(selfInvalidating: true))
                holder.set(ref)
                let copy = ref
                copy.tell(.work(1))
            }
            // Only the holder's copy remains: the actor keeps running.
            let answer = try await holder.get()!.ask { Resource.Message.echo(7, $0) }
            #expect(answer == 7)
            #expect(!holder.get()!.isStopped)
            let watched = Recorder<String>()
            holder.get()!.whenTerminated { watched.append("\($0.reason)") }
            holder.set(nil)
            await waitUntil("stopped once the holder let go") { watched.count == 1 }
            #expect(watched.values == ["self-invalidated"])
            #expect(events.values.last == "cleanup self-invalidated")
        }
    }

    @Test func refsTheActorMakesOfItselfDoNotEndItWhileTheSpawnerHoldsOne() async throws {
        try await withTestSystem { system in
            for _ in 0..<200 {
                let events = Recorder<String>()
                // `started` makes and drops refs to itself, possibly before `spawn` returned.
                let ref = system.spawn(
                    Resource(events: events, touchesItselfOnStart: true),
                    options: SpawnOptions(selfInvalidating: true))
                let answer = try await ref.ask { Resource.Message.echo(1, $0) }
                #expect(answer == 1)
                #expect(!ref.isStopped)
            }
        }
    }

    @Test func actorsWithoutTheOptionAreNotAffected() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let controlEvents = Recorder<String>()
            let controlTerminated = Recorder<String>()
            do {
                let ref = system.spawn(Resource(events: events))
                ref.tell(.work(1))
                // A control actor with the option, whose last reference goes at the same moment.
                let control = system.spawn(
                    Resource(events: controlEvents), options: SpawnOptions(selfInvalidating: true))
                control.whenTerminated { controlTerminated.append("\($0.reason)") }
                control.tell(.work(1))
            }
            await waitUntil("handled") { events.count == 1 }
            // Once the control actor has stopped, dropping the references has had its effect:
            // the actor without the option must still be live (no fixed sleep).
            await waitUntil("the control actor stopped") { controlTerminated.count == 1 }
            #expect(system.liveActorCount == 1, "without the option an actor lives until stopped")
        }
    }

    /// Spawns, sends three messages while the actor is blocked, and drops the only ref.
    private func spawnAndForget(
        _ system: ActorSystem, events: Recorder<String>, gate: Gate, terminated: Recorder<String>
    ) {
        let ref = system.spawn(Resource(events: events, gate: gate), options: SpawnOptions(selfInvalidating: true))
        ref.whenTerminated { terminated.append("\($0.reason)") }
        ref.tell(.block)
        for value in 1...3 { ref.tell(.work(value)) }
    }
}

final class RefHolder: Sendable {
    private let ref = Mutex<ActorRef<Resource.Message>?>(nil)
    func set(_ value: ActorRef<Resource.Message>?) { ref.withLock { $0 = value } }
    func get() -> ActorRef<Resource.Message>? { ref.withLock { $0 } }
}

struct Resource: ActorDefinition {
    enum Message: Sendable {
        case work(Int)
        case echo(Int, Reply<Int>)
        case block
    }

    let events: Recorder<String>
    var gate: Gate?
    var touchesItselfOnStart = false

    func started(context: ActorContext<Message>) {
        guard touchesItselfOnStart else { return }
        for _ in 0..<3 { _ = context.ref.isStopped }
    }

    func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .work(let value): events.append("handled \(value)")
        case .echo(let value, let reply): reply.succeed(value)
        case .block: gate?.enter()
        }
    }

    func stopped(context: ActorContext<Message>) {
        events.append("cleanup \(context.terminationReason.map { "\($0)" } ?? "running?")")
    }
}
