import Hummingbird
import Synchronization
import Troupe

/// Requests and server errors per route, given to the actor system's snapshots as a table, and
/// every request's time in the handlers as a histogram: the observer's page shows the table
/// with each count's rate and the histogram's percentiles, and `GET /debug/actors` prints both.
final class RouteCounts: Sendable {
    private let counts = Mutex<[String: (requests: Int, errors: Int)]>([:])
    private let latency = LatencyRecorder()

    func record(_ route: String, failed: Bool, took duration: Duration) {
        latency.record(duration)
        counts.withLock { counts in
            counts[route, default: (0, 0)].requests += 1
            if failed { counts[route, default: (0, 0)].errors += 1 }
        }
    }

    var section: SnapshotSection {
        let rows = counts.withLock { $0 }.sorted { $0.key < $1.key }.map { route, count in
            [route, "\(count.requests)", "\(count.errors)"]
        }
        return SnapshotSection(
            kind: "http", instance: "shop-service", histograms: [.init("request_latency", latency.histogram)],
            tables: [.init("routes", columns: ["route", "requests_total", "server_errors_total"], rows: rows)])
    }
}

/// Counts each request under its method and its route's pattern (as registered, never the path
/// itself: one row per route however many users), or `unmatched` when no route took it.
struct RouteCountingMiddleware<Context: RequestContext>: RouterMiddleware {
    let counts: RouteCounts

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    )
        async throws -> Response
    {
        let started = ContinuousClock.now
        do {
            let response = try await next(request, context)
            counts.record(
                Self.route(request, context), failed: response.status.code >= 500, took: .now - started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            counts.record(Self.route(request, context), failed: status >= 500, took: .now - started)
            throw error
        }
    }

    private static func route(_ request: Request, _ context: Context) -> String {
        context.endpointPath.map { "\(request.method) \($0)" } ?? "unmatched"
    }
}
