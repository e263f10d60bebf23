import Synchronization
import Testing
import TroupeTestSupport

@testable import Troupe

/// The system's live actors (`LiveActors`): an array in spawn order with holes where actors
/// stopped, squeezed once the holes outnumber the members; snapshots list the members most
/// recent first, and a walk that gives the lock up while the array is squeezed starts again.
@Suite struct LiveActorsTests {
    /// How many times the system's live actors were squeezed.
    static func generation(_ system: ActorSystem) -> Int {
        system.liveActors.withLock { $0.generation }
    }

    @Test func stopsInTheMiddleLeaveHolesThatAreSqueezedOutInOrder() async throws {
        try await withTestSystem { system in
            let early = (0..<5_000).map { _ in system.spawn(Counter()) }
            let late = (0..<1_000).map { _ in system.spawn(Counter()) }
            for ref in late { _ = try await ref.ask { .get($0) } }
            #expect(Self.generation(system) == 0)
            // 4,000 holes in the middle, for 2,000 members: more than 1,024 and than the members.
            for ref in early.prefix(4_000) { ref.stop() }
            await waitUntil("4,000 stopped") { system.liveActorCount == 2_000 }
            #expect(Self.generation(system) >= 1)
            let ids = system.snapshot().actors.map(\.address.id)
            let expected = (early.suffix(1_000) + late).map(\.address.id).reversed()
            #expect(ids == Array(expected))
            #expect(system.liveActors.withLock { $0.end } <= 2_000 + 1_024)
            // The members moved and still know their places: each stops cleanly.
            for ref in early.suffix(1_000) + late { ref.stop() }
            await waitUntil("every actor stopped") { system.liveActorCount == 0 }
            #expect(system.liveActors.withLock { $0.end } == 0)
            #expect(system.snapshot().actors.isEmpty)
        }
    }

    @Test func theNewestLeavingLeavesNoHoles() async throws {
        try await withTestSystem { system in
            let kept = (0..<10).map { _ in system.spawn(Counter()) }
            for _ in 0..<20 {
                let passing = (0..<500).map { _ in system.spawn(Counter()) }
                for ref in passing.reversed() { ref.stop() }
                await waitUntil("the passing actors stopped") { system.liveActorCount == 10 }
            }
            #expect(system.liveActors.withLock { $0.end } == 10)
            #expect(Self.generation(system) == 0)
            #expect(system.snapshot().actors.map(\.address.id) == kept.map(\.address.id).reversed())
        }
    }

    @Test func aTopActorsWalkStartsAgainWhenTheActorsAreSqueezedMeanwhile() async throws {
        try await withTestSystem { system in
            // 500 kept actors; the busiest have 5, 4, 3, 2 and 1 adds (plus the ask).
            let kept = try await spawnCountersBusiestEveryHundredth(500, in: system)
            let before = Self.generation(system)
            let running = Atomic<Bool>(true)
            // Batches of 6,000 that stop in a shuffled order: more holes than members, so the
            // array is squeezed while the walks below give the lock up between stretches.
            let churn = Task.detached {
                while running.load(ordering: .relaxed) {
                    let refs = (0..<6_000).map { _ in system.spawn(Counter()) }
                    for ref in refs.shuffled() { ref.stop() }
                }
            }
            // At least 30 walks, and on until the churn has squeezed the array twice. A
            // millisecond between walks leaves the churn a core: under ASan, walks back to back
            // let it squeeze only twice in 20 s (CI rehearsal, 2026-12-02; three were asked then).
            let deadline = ContinuousClock.now + StressScale.hangGuard(.seconds(20))
            var walks = 0
            while walks < 30 || Self.generation(system) < before + 2 {
                let top = system.snapshot(topActors: 5, by: .messagesProcessed)
                #expect(top.actors.map(\.messagesProcessed) == [5, 4, 3, 2, 1])
                #expect(top.matchingActorCount >= 500)
                #expect(top.matchingActorCount == top.liveActorCount)
                walks += 1
                try await Task.sleep(for: .milliseconds(1))
                if ContinuousClock.now > deadline {
                    let squeezes = Self.generation(system) - before
                    Issue.record("the churn squeezed the live actors \(squeezes) times in \(walks) walks")
                    break
                }
            }
            running.store(false, ordering: .relaxed)
            await churn.value
            await waitUntil("the churn stopped") { system.liveActorCount == 500 }
            withExtendedLifetime(kept) {}
        }
    }
}
