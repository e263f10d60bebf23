import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// `system.snapshot(topActors:by:matching:)`: the same actors, in the same order, as sorting a
/// full snapshot would give, a search over names, ids and types, and a walk that gives the
/// actor list up while actors stop.
@Suite struct TopActorsSnapshotTests {
    /// The full snapshot's actors in `ranking`'s order (the reference the walk must match).
    static func reference(_ system: ActorSystem, _ ranking: ActorRanking) -> [ActorSnapshot] {
        system.snapshot().actors.sorted { a, b in
            func key(_ actor: ActorSnapshot) -> Int {
                switch ranking {
                case .messagesProcessed: Int(actor.messagesProcessed)
                case .mailboxDepth: actor.mailboxDepth ?? -1
                case .failures: actor.failures
                case .restarts: actor.restarts
                case .name: 0
                }
            }
            if ranking == .name {
                let (left, right) = (a.address.description, b.address.description)
                return left != right ? left < right : a.address.id < b.address.id
            }
            return key(a) != key(b) ? key(a) > key(b) : a.address.id > b.address.id
        }
    }

    @Test func theTopActorsAreTheFullSnapshotsFirstInEveryRanking() async throws {
        try await withTestSystem(failureDecider: { _ in .restart }) { system in
            var generator = SystemRandomNumberGenerator()
            var refs: [ActorRef<Counter.Message>] = []
            for index in 0..<300 {
                let name: String? = index % 3 == 0 ? nil : "n\(Int.random(in: 0..<50, using: &generator))"
                let ref = system.spawn(Counter(), options: SpawnOptions(name: name, tracksMailboxDepth: index % 2 == 0))
                for _ in 0..<Int.random(in: 0..<20, using: &generator) { ref.tell(.add(1)) }
                refs.append(ref)
            }
            for ref in refs { _ = try await ref.ask { .get($0) } }
            let flaky = (0..<5).map { _ in system.spawn(options: .default) { FailOnDemand() } }
            for (index, ref) in flaky.enumerated() {
                for _ in 0...index { ref.tell(.fail) }
                _ = try await ref.ask { .ping($0) }
            }
            for ranking in ActorRanking.allCases {
                for limit in [0, 1, 7, 50, 1000] {
                    let top = system.snapshot(topActors: limit, by: ranking)
                    let expected = Self.reference(system, ranking).prefix(limit).map(\.address)
                    #expect(top.actors.map(\.address) == Array(expected), "\(ranking), limit \(limit)")
                    #expect(top.matchingActorCount == 305)
                    #expect(top.liveActorCount == 305)
                }
            }
            let failing = system.snapshot(topActors: 2, by: .failures).actors
            #expect(failing.map(\.failures) == [5, 4])
            #expect(failing.allSatisfy { $0.isRestartable })
        }
    }

    @Test func theSearchMatchesNamesIdsAndTypesIgnoringCase() async throws {
        try await withTestSystem { system in
            let alpha = system.spawn(Counter(), options: SpawnOptions(name: "Alpha-Orders"))
            _ = system.spawn(Counter(), options: SpawnOptions(name: "beta"))
            let unnamed = system.spawn(FailOnDemand())
            let byName = system.snapshot(topActors: 10, by: .name, matching: "alpha-o")
            #expect(byName.actors.map(\.address) == [alpha.address])
            #expect(byName.matchingActorCount == 1)
            #expect(
                system.snapshot(topActors: 10, by: .name, matching: "ORDERS").actors.map(\.address) == [alpha.address])
            let byType = system.snapshot(topActors: 10, by: .name, matching: "failondemand")
            #expect(byType.actors.map(\.address) == [unnamed.address])
            let byID = system.snapshot(topActors: 10, by: .name, matching: "#\(unnamed.address.id)")
            #expect(byID.actors.map(\.address) == [unnamed.address])
            let byAddress = system.snapshot(topActors: 10, by: .name, matching: "alpha-orders#\(alpha.address.id)")
            #expect(byAddress.actors.map(\.address) == [alpha.address])
            let unnamedAddress = system.snapshot(topActors: 10, by: .name, matching: "\(unnamed.address)")
            #expect(unnamedAddress.actors.map(\.address) == [unnamed.address], "actor#ID as shown")
            let counters = system.snapshot(topActors: 1, by: .name, matching: "counter")
            #expect(counters.matchingActorCount == 2, "both Counters match by type")
            #expect(counters.actors.map(\.name) == ["Alpha-Orders"])
            #expect(system.snapshot(topActors: 10, by: .name, matching: "nothing-like-it").actors.isEmpty)
            #expect(system.snapshot(topActors: 10, by: .name, matching: "nothing-like-it").matchingActorCount == 0)
        }
    }

    @Test func aWalkOverManyActorsWhileOthersStopStaysConsistent() async throws {
        try await withTestSystem { system in
            // More than one stretch of 4,096 under the lock, so the walk gives the list up and
            // goes on from a member that may stop meanwhile.
            let kept = (0..<10_000).map { _ in system.spawn(Counter()) }
            for (index, ref) in kept.enumerated() where index % 100 == 0 {
                for _ in 0..<(index / 100) { ref.tell(.add(1)) }
            }
            for ref in kept { _ = try await ref.ask { .get($0) } }
            let stopping = Atomic<Bool>(true)
            let churn = Task.detached {
                while stopping.load(ordering: .relaxed) {
                    let refs = (0..<200).map { _ in system.spawn(Counter()) }
                    for ref in refs.shuffled() { ref.stop() }
                }
            }
            for _ in 0..<20 {
                let top = system.snapshot(topActors: 5, by: .messagesProcessed)
                // The busiest kept actors: 99, 98, 97, 96, 95 adds, plus the ask.
                #expect(top.actors.map(\.messagesProcessed) == [100, 99, 98, 97, 96])
                #expect(top.matchingActorCount >= 10_000)
                #expect(top.matchingActorCount == top.liveActorCount)
            }
            stopping.store(false, ordering: .relaxed)
            await churn.value
            withExtendedLifetime(kept) {}
        }
    }
}
