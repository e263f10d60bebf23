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
            let kept = try await spawnCountersBusiestEveryHundredth(10_000, in: system)
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

    @Test func eachActorNamesItsParentAndASearchForParentListsAnActorsChildren() async throws {
        try await withTestSystem { system in
            let parent = system.spawn(Family(), options: SpawnOptions(name: "family"))
            let children = try await parent.ask { .spawnChildren(3, $0) }
            #expect(children.count == 3)
            let grandchild = try await parent.ask { .spawnGrandchild($0) }
            let stranger = system.spawn(Counter())
            // The stranger's name holds the search text: only the link counts.
            let lookalike = system.spawn(Counter(), options: SpawnOptions(name: "parent:#\(parent.address.id)"))

            let full = system.snapshot().actors
            let byID = Dictionary(uniqueKeysWithValues: full.map { ($0.address.id, $0) })
            #expect(byID[parent.address.id]?.parentID == nil)
            #expect(byID[stranger.address.id]?.parentID == nil)
            for child in children { #expect(byID[child.id]?.parentID == parent.address.id) }
            #expect(byID[grandchild.id]?.parentID == children[0].id)

            for search in ["parent:#\(parent.address.id)", "PARENT:\(parent.address.id)"] {
                let found = system.snapshot(topActors: 10, by: .name, matching: search)
                #expect(Set(found.actors.map(\.address.id)) == Set(children.map(\.id)), "\(search)")
                #expect(found.matchingActorCount == 3)
            }
            for search in ["id:#\(parent.address.id)", "ID:\(parent.address.id)"] {
                let exact = system.snapshot(topActors: 10, by: .name, matching: search)
                #expect(exact.actors.map(\.address.id) == [parent.address.id], "\(search)")
            }
            let ofChild = system.snapshot(topActors: 10, by: .name, matching: "parent:#\(children[0].id)")
            #expect(ofChild.actors.map(\.address.id) == [grandchild.id])
            #expect(
                system.snapshot(topActors: 10, by: .name, matching: "parent:#\(stranger.address.id)").actors.isEmpty)
            // Not a number after `parent:`: an ordinary text search (it finds the lookalike's name).
            let text = system.snapshot(topActors: 10, by: .name, matching: "parent:#x")
            #expect(text.actors.isEmpty)
            _ = lookalike
        }
    }
}

/// An actor that spawns children (and a grandchild) on request and answers with their addresses.
private struct Family: ActorDefinition {
    enum Message: Sendable {
        case spawnChildren(Int, Reply<[ActorAddress]>)
        case spawnGrandchild(Reply<ActorAddress>)
    }

    var children: [ActorRef<Family.Message>] = []

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .spawnChildren(let count, let reply):
            for _ in 0..<count { children.append(context.spawn(Family())) }
            _ = reply.succeed(children.map(\.address))
        case .spawnGrandchild(let reply):
            let forward = Reply<[ActorAddress]>(onCompletion: { result in
                switch result {
                case .success(let addresses): _ = reply.succeed(addresses[0])
                case .failure(let error): _ = reply.fail(error)
                }
            })
            children[0].tell(.spawnChildren(1, forward))
        }
    }
}
