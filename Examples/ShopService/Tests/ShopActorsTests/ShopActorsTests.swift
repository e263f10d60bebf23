import ShopActors
import Testing
import Troupe

/// The shop's actors without HTTP: sessions on demand, idle sessions leave, checkout totals,
/// the activity feed.
@Suite struct ShopActorsTests {
    func makeShop(idle: Duration = .seconds(60)) throws -> Shop {
        let system = ActorSystem(configuration: .init(name: "shop-test", workerCount: 2, pinWorkers: false))
        return try Shop(system: system, backendLatency: .milliseconds(1), backendPoolSize: 4, sessionIdleTimeout: idle)
    }

    @Test func aUsersSessionIsMadeOnceAndKeepsTheCart() async throws {
        let shop = try makeShop()
        let first = try await shop.session(of: "ada")
        first.tell(.add(item: "tea"))
        first.tell(.add(item: "cake"))
        let again = try await shop.session(of: "ada")
        #expect(again.address == first.address)
        #expect(try await again.ask { .items($0) } == ["tea", "cake"])
        let other = try await shop.session(of: "bob")
        #expect(other.address != first.address)
        #expect(try await other.ask { .items($0) } == [])
        await shop.system.shutdown()
    }

    @Test func checkoutPricesEveryItemThroughThePoolAndEmptiesTheCart() async throws {
        let shop = try makeShop()
        let session = try await shop.session(of: "ada")
        for item in ["tea", "cake", "jam"] { session.tell(.add(item: item)) }
        let receipt = try await session.ask { .checkout($0) }
        #expect(receipt.items == ["tea", "cake", "jam"])
        #expect(receipt.totalCents == ["tea", "cake", "jam"].map(PriceBackend.price(of:)).reduce(0, +))
        #expect(try await session.ask { .items($0) } == [])
        let summary = try await shop.activity.log.ask { .summary($0) }
        #expect(summary.counts["added"] == 3)
        #expect(summary.counts["checkedOut"] == 1)
        await shop.system.shutdown()
    }

    @Test func aFailedMessageIsKeptAsAFailureAndTheCartGoesOn() async throws {
        let shop = try makeShop()
        let session = try await shop.session(of: "ada")
        session.tell(.add(item: "tea"))
        let fail = try #require(Session.testMessage(from: "fail broken-scale"), "the page's `fail REASON`")
        session.tell(fail)
        #expect(Session.testMessage(from: "explode now") == nil)
        session.tell(.add(item: "cake"))
        #expect(try await session.ask { .items($0) } == ["tea", "cake"], "resumed with its items")
        let failures = shop.system.recentFailures.filter { $0.actor == session.address }
        #expect(failures.count == 1)
        #expect(failures.first?.action == .resume)
        #expect(failures.first?.error == "SessionFault: broken-scale")
        await shop.system.shutdown()
    }

    @Test func anIdleSessionStopsItselfAndTheDirectoryForgetsIt() async throws {
        let shop = try makeShop(idle: .milliseconds(100))
        let session = try await shop.session(of: "ada")
        session.tell(.add(item: "tea"))
        let ended = await session.terminated()
        guard case .stopped = ended.reason else {
            Issue.record("the idle session stopped with \(ended.reason)")
            return
        }
        var remaining = try await shop.directory.ask { .count($0) }
        for _ in 0..<200 where remaining != 0 {
            try await Task.sleep(for: .milliseconds(5))
            remaining = try await shop.directory.ask { .count($0) }
        }
        #expect(remaining == 0)
        let fresh = try await shop.session(of: "ada")
        #expect(fresh.address != session.address, "a new session after the idle one left")
        #expect(try await fresh.ask { .items($0) } == [])
        await shop.system.shutdown()
    }
}
