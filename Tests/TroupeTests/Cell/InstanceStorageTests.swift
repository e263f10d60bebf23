import Testing
import TroupeTestSupport

@testable import Troupe

/// An instance of up to 48 bytes, aligned to at most 8, lives inside its cell (a spawn is one
/// allocation); a larger or more aligned one lives in a box of its own. Both hold their state
/// across messages, are replaced by a restart (the old one freed then), and are freed on the
/// actor's thread the moment it stops, while refs to it remain.
@Suite struct InstanceStorageTests {
    final class Canary: Sendable {
        let generation: Int
        let freed: Recorder<Int>
        init(_ generation: Int, _ freed: Recorder<Int>) {
            self.generation = generation
            self.freed = freed
        }
        deinit { freed.append(generation) }
    }

    enum Command: Sendable {
        case add(Int)
        case total(Reply<Int>)
        case fail
    }

    struct Failure: Error {}

    /// Each definition counts what it was told and keeps a canary; they differ only in layout.
    protocol Counting: ActorDefinition where Message == Command {
        init(canary: Canary)
        var total: Int { get set }
    }

    /// 16 bytes: inside the cell.
    struct Small: Counting {
        let canary: Canary
        var total = 0
        init(canary: Canary) { self.canary = canary }
    }

    /// Exactly the room's 48 bytes: inside the cell.
    struct Full: Counting {
        let canary: Canary
        var total = 0
        var padding: (Int, Int, Int, Int) = (1, 2, 3, 4)
        init(canary: Canary) { self.canary = canary }
    }

    /// 56 bytes: one word too many, so boxed.
    struct Large: Counting {
        let canary: Canary
        var total = 0
        var padding: (Int, Int, Int, Int, Int) = (1, 2, 3, 4, 5)
        init(canary: Canary) { self.canary = canary }
    }

    /// 32 bytes but 16-aligned (a SIMD vector): boxed, since the room is only word-aligned.
    struct Aligned: Counting {
        let canary: Canary
        var total = 0
        var lanes = SIMD4<Float>(1, 2, 3, 4)
        init(canary: Canary) { self.canary = canary }
    }

    @Test func whereEachLayoutLives() {
        #expect(MemoryLayout<Small>.size == 16)
        #expect(ActorCell<Small>.storesInstanceInline)
        #expect(MemoryLayout<Full>.size == 48)
        #expect(ActorCell<Full>.storesInstanceInline)
        #expect(MemoryLayout<Large>.size == 56)
        #expect(!ActorCell<Large>.storesInstanceInline)
        #expect(MemoryLayout<Aligned>.alignment == 16)
        #expect(!ActorCell<Aligned>.storesInstanceInline)
        #expect(ActorCell<Stateless>.storesInstanceInline)
    }

    @Test func stateRestartAndStopForAnInlineInstance() async throws {
        try await exercise(Small.self, boxed: false)
        try await exercise(Full.self, boxed: false)
    }

    @Test func stateRestartAndStopForABoxedInstance() async throws {
        try await exercise(Large.self, boxed: true)
        try await exercise(Aligned.self, boxed: true)
    }

    /// Counts, restarts (the first instance freed, the count back to zero), counts again, stops
    /// (the second instance freed at once, though the test still holds the ref).
    func exercise<Definition: Counting>(_ type: Definition.Type, boxed: Bool) async throws {
        try await withTestSystem { system in
            let freed = Recorder<Int>()
            let generation = AtomicCounter()
            let actor = system.spawn(options: SpawnOptions(failureDecider: { _ in .restart })) {
                Definition(canary: Canary(generation.increment(), freed))
            }
            let cell = try #require(actor.cell as? ActorCell<Definition>)
            #expect((cell.instanceBox != nil) == boxed, "\(Definition.self)")
            for n in 1...100 { actor.tell(.add(n)) }
            #expect(try await actor.ask { .total($0) } == 5_050)
            actor.tell(.fail)
            actor.tell(.add(7))
            #expect(try await actor.ask { .total($0) } == 7, "a restart starts from a fresh instance")
            #expect(freed.values == [1], "the replaced instance is freed by the restart")
            actor.stop()
            _ = await actor.terminated()
            await waitUntil("the second instance is freed") { freed.count == 2 }
            #expect(freed.values == [1, 2])
            #expect(cell.instanceAddress.load(ordering: .relaxed) == 0)
            #expect(cell.instanceBox == nil)
            withExtendedLifetime(actor) {}
        }
    }

    /// The plain `spawn(_:)` (no factory) chooses the same way.
    @Test func anInstanceSpawnedWithoutAFactoryIsFreedWhenItStops() async throws {
        try await withTestSystem { system in
            let freed = Recorder<Int>()
            let small = system.spawn(Small(canary: Canary(1, freed)))
            let large = system.spawn(Large(canary: Canary(2, freed)))
            #expect((small.cell as? ActorCell<Small>)?.instanceBox == nil)
            #expect((large.cell as? ActorCell<Large>)?.instanceBox != nil)
            small.tell(.add(3))
            large.tell(.add(4))
            let smallTotal = try await small.ask { Command.total($0) }
            let largeTotal = try await large.ask { Command.total($0) }
            #expect(smallTotal == 3)
            #expect(largeTotal == 4)
            small.stop()
            large.stop()
            await waitUntil("both instances are freed") { freed.count == 2 }
            #expect(Set(freed.values) == [1, 2])
            withExtendedLifetime((small, large)) {}
        }
    }

    /// A zero-sized definition needs no room, but still runs and stops.
    struct Stateless: ActorDefinition {
        let seen: Recorder<Int>
        func receive(_ message: Int, context: ActorContext<Int>) { seen.append(message) }
    }

    @Test func aStatelessDefinitionRunsFromTheCell() async throws {
        try await withTestSystem { system in
            let seen = Recorder<Int>()
            let actor = system.spawn(Stateless(seen: seen))
            for n in 0..<10 { actor.tell(n) }
            await waitUntil("all handled") { seen.count == 10 }
            #expect(seen.values == Array(0..<10))
            actor.stop()
            _ = await actor.terminated()
        }
    }
}

extension InstanceStorageTests.Counting {
    typealias Command = InstanceStorageTests.Command

    mutating func receive(_ message: Command, context: ActorContext<Command>) throws {
        switch message {
        case .add(let n): total += n
        case .total(let reply): reply.succeed(total)
        case .fail: throw InstanceStorageTests.Failure()
        }
    }
}
