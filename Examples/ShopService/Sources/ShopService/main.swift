#if canImport(Glibc)
    import Glibc
#endif
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import ShopActors
import Troupe
import TroupeMetrics
import TroupeObserver
import TroupeServiceLifecycle

// Settings from the environment: SHOP_PORT (8080), SHOP_HOST (127.0.0.1), SHOP_LOG_LEVEL (info),
// SHOP_BACKEND_LATENCY_MS (2), SHOP_OBSERVER_PORT (8081; 0 picks a free one, "off" serves no
// observer), SHOP_OBSERVER_TOKEN (a random one when unset).
let environment = Environment()
let port = environment.get("SHOP_PORT").flatMap(Int.init) ?? 8080
let host = environment.get("SHOP_HOST") ?? "127.0.0.1"
let backendLatency = Duration.milliseconds(environment.get("SHOP_BACKEND_LATENCY_MS").flatMap(Int.init) ?? 2)

// Structured logs on stderr; one logger for the server, the actor system and the group.
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = environment.get("SHOP_LOG_LEVEL").flatMap(Logger.Level.init(rawValue:)) ?? .info
    return handler
}
let logger = Logger(label: "shop")

// Metrics for Prometheus: Troupe's (TroupeMetrics) and Hummingbird's, on one registry.
let registry = PrometheusCollectorRegistry()
MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

let system = ActorSystem(configuration: .init(name: "shop", logger: logger))
let metrics = TroupeMetrics(system: system)
let shop = try Shop(system: system, backendLatency: backendLatency)

// The observer's live page on loopback: its address, with the token, is printed on stdout.
let observerPort = environment.get("SHOP_OBSERVER_PORT") ?? "8081"
let observer: Observer? =
    observerPort == "off"
    ? nil
    : try await system.serveObserver(
        ObserverSettings(port: Int(observerPort) ?? 8081, token: environment.get("SHOP_OBSERVER_TOKEN")))
if let observer {
    // Written at once (print's stdout is buffered when it is not a terminal).
    let line = "observer: \(observer.url)\n"
    _ = line.withCString { write(STDOUT_FILENO, $0, strlen($0)) }
}

// Requests per route, in the system's snapshots (a table on the observer's page).
let routeCounts = RouteCounts()
system.provideSnapshotSection(key: "http routes") { routeCounts.section }

let app = Application(
    router: buildRouter(shop: shop, registry: registry, counts: routeCounts),
    configuration: .init(address: .hostname(host, port: port), serverName: "shop"),
    logger: logger)

// Listed first, the actor system shuts down last: on SIGTERM the server stops accepting and
// finishes its requests (whose asks the actors still answer), then the actors drain.
let group = ServiceGroup(
    configuration: .init(
        services: [.init(service: ActorSystemService(system)), .init(service: app)],
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger))
logger.info("shop service starting", metadata: ["address": "\(host):\(port)", "workers": "\(system.workerCount)"])
try await group.run()
await observer?.shutdown()
logger.info("shop service stopped", metadata: ["dead_letters": "\(system.deadLetters.total)"])
