import Foundation
import Testing
import Troupe
import TroupeTestSupport

@testable import TroupeObserver

/// A page is sent the whole document once, then only what changed: the delta between two
/// documents rebuilds the second from the first, holds only the rows that changed, and is
/// nothing at all when nothing changed.
struct StateDocumentTests {
    private static func parse(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func aDeltaRebuildsTheNextDocumentAndCarriesOnlyWhatChanged() async throws {
        try await withTestSystem { system in
            let idle = (0..<20).map { system.spawn(Counter(), options: SpawnOptions(name: "idle-\($0)")) }
            let busy = system.spawn(Counter(), options: SpawnOptions(name: "busy"))
            let leaving = system.spawn(Counter(), options: SpawnOptions(name: "leaving"))
            for actor in idle + [busy, leaving] { _ = try await actor.ask { .get($0) } }
            await waitUntil("workers idle") { system.busyWorkerCount == 0 }
            let sampler = SystemSampler(system: system)
            let view = ActorView(query: "sort=name&limit=50")
            let first = sampler.document(sampler.sample(), view: view)
            #expect(first.actors.count == 22)

            // The same sample again: nothing changed, nothing to send.
            let again = sampler.sample()
            let unchanged = sampler.document(again, view: view)
            let second = sampler.document(again, view: view)
            #expect(second.delta(from: unchanged) == nil, "a delta although nothing changed")

            for _ in 0..<5 { busy.tell(.add(1)) }
            #expect(try await busy.ask { .get($0) } == 5)
            leaving.stop()
            await waitUntil("the actor left") { system.liveActorCount == 21 }
            let arrived = system.spawn(Counter(), options: SpawnOptions(name: "arrived"))
            _ = try await arrived.ask { .get($0) }
            await waitUntil("workers idle") { system.busyWorkerCount == 0 }
            let third = sampler.document(sampler.sample(), view: view)

            let text = try #require(third.delta(from: second))
            let delta = try Self.parse(text)
            #expect(delta["delta"] as? Bool == true)
            let rows = try #require(delta["actors"] as? [[String: Any]])
            // The busy actor's count changed and one actor is new; the twenty idle ones are not
            // sent again (the stopped one is only missing from the order).
            #expect(Set(rows.compactMap { $0["name"] as? String }) == ["busy", "arrived"])
            let order = try #require(delta["actorOrder"] as? [Int])
            #expect(order.count == 22)
            #expect(!order.contains(Int(leaving.address.id)))
            let members = try #require(delta["system"] as? [String: Any])
            // One actor stopped and one arrived: the count is the same, and not sent again.
            #expect(members["actorCount"] == nil)
            #expect(members["handlersStarted"] != nil, "a changed member was not sent")
            #expect(members["name"] == nil, "an unchanged member was sent")
            #expect(text.utf8.count < third.text.utf8.count / 2, "the delta is not much smaller than the document")

            // Applied as a page applies it, the delta gives the whole new document.
            let rebuilt = ObserverClient.merge(delta, into: try Self.parse(second.text))
            #expect(NSDictionary(dictionary: rebuilt) == NSDictionary(dictionary: try Self.parse(third.text)))
        }
    }
}
