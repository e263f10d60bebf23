import Hummingbird
import Prometheus
import ShopActors
import Troupe

/// The HTTP API. Every handler asks actors; an ask that fails becomes a 503 with the reason.
///
///     POST   /users/:user/cart/:item    add an item          -> the cart
///     DELETE /users/:user/cart/:item    remove it            -> the cart
///     GET    /users/:user/cart          the cart
///     POST   /users/:user/checkout      price it (the backend pool), empty it -> the receipt
///     GET    /prices/:item              one price from the backend pool
///     GET    /activity                  counts and latest changes (the pub/sub feed)
///     GET    /metrics                   Prometheus exposition
///     GET    /debug/actors              `system.snapshot()` as text
func buildRouter(shop: Shop, registry: PrometheusCollectorRegistry, counts: RouteCounts) -> Router<BasicRequestContext>
{
    let router = Router()
    router.add(middleware: RouteCountingMiddleware(counts: counts))
    router.post("users/:user/cart/:item") { _, context -> Cart in
        let (user, item) = try (context.parameters.require("user"), context.parameters.require("item"))
        let session = try await answer { try await shop.session(of: user) }
        session.tell(.add(item: item))
        return Cart(user: user, items: try await answer { try await session.ask { .items($0) } })
    }
    router.delete("users/:user/cart/:item") { _, context -> Cart in
        let (user, item) = try (context.parameters.require("user"), context.parameters.require("item"))
        let session = try await answer { try await shop.session(of: user) }
        session.tell(.remove(item: item))
        return Cart(user: user, items: try await answer { try await session.ask { .items($0) } })
    }
    router.get("users/:user/cart") { _, context -> Cart in
        let user = try context.parameters.require("user")
        let session = try await answer { try await shop.session(of: user) }
        return Cart(user: user, items: try await answer { try await session.ask { .items($0) } })
    }
    router.post("users/:user/checkout") { _, context -> Receipt in
        let user = try context.parameters.require("user")
        let session = try await answer { try await shop.session(of: user) }
        return try await answer { try await session.ask { .checkout($0) } }
    }
    router.get("prices/:item") { _, context -> Price in
        let item = try context.parameters.require("item")
        return Price(item: item, cents: try await answer { try await shop.prices.ask { .price(of: item, $0) } })
    }
    router.get("activity") { _, _ -> ActivitySummary in
        try await answer { try await shop.activity.log.ask { .summary($0) } }
    }
    router.get("metrics") { _, _ -> String in
        registry.emitToString()
    }
    router.get("debug/actors") { _, _ -> String in
        "\(shop.system.snapshot())\n"
    }
    return router
}

struct Cart: ResponseCodable {
    let user: String
    let items: [String]
}

struct Price: ResponseCodable {
    let item: String
    let cents: Int
}

extension Receipt: ResponseEncodable {}
extension ActivitySummary: ResponseEncodable {}

/// Runs an ask; its failure (timed out, the system shutting down, a handler's error) becomes an
/// HTTP 503 whose body says why.
func answer<Value>(_ ask: () async throws -> Value) async throws(HTTPError) -> Value {
    do {
        return try await ask()
    } catch let error as HTTPError {
        throw error
    } catch {
        throw HTTPError(.serviceUnavailable, message: "\(error)")
    }
}
