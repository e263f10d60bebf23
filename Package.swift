// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "Troupe",
    products: [
        .library(name: "Troupe", targets: ["Troupe"]),
        .library(name: "TroupePromises", targets: ["TroupePromises"]),
        .library(name: "TroupePubSub", targets: ["TroupePubSub"]),
        .library(name: "TroupeSupervision", targets: ["TroupeSupervision"]),
        .library(name: "TroupeMetrics", targets: ["TroupeMetrics"]),
        .library(name: "TroupeServiceLifecycle", targets: ["TroupeServiceLifecycle"]),
        .library(name: "TroupeTracing", targets: ["TroupeTracing"]),
        .library(name: "TroupeTesting", targets: ["TroupeTesting"]),
        .library(name: "TroupeCluster", targets: ["TroupeCluster"]),
        // TLS with mutual authentication for TroupeCluster's connections (swift-nio-ssl, which
        // bundles BoringSSL: no system package).
        .library(name: "TroupeClusterTLS", targets: ["TroupeClusterTLS"]),
        .library(name: "TroupePersistence", targets: ["TroupePersistence"]),
        .library(name: "TroupePersistenceSQLite", targets: ["TroupePersistenceSQLite"]),
        .library(name: "TroupePersistencePostgres", targets: ["TroupePersistencePostgres"]),
        .library(name: "TroupeVirtualActors", targets: ["TroupeVirtualActors"]),
        // Virtual actors placed over the nodes of a TroupeCluster.
        .library(name: "TroupeClusterEntities", targets: ["TroupeClusterEntities"]),
        // TroupeCluster's membership as a pure state machine (SWIM with Lifeguard, gossip):
        // driven by TroupeCluster, and by anyone who runs it over a transport or a simulation.
        .library(name: "TroupeClusterMembership", targets: ["TroupeClusterMembership"]),
        // The cluster at a thousand nodes, simulated on virtual time (the real membership code).
        .library(name: "TroupeClusterSimulator", targets: ["TroupeClusterSimulator"]),
        // A live page into a running system, over HTTP and WebSocket (SwiftNIO's).
        .library(name: "TroupeObserver", targets: ["TroupeObserver"]),
        .library(name: "TroupeObserverTLS", targets: ["TroupeObserverTLS"]),
        // The observer's view in a terminal: `troupe-observe URL`.
        .executable(name: "troupe-observe", targets: ["troupe-observe"]),
        // One cluster node with an echo actor that prints membership events: for trying a
        // cluster by hand, and for the multi-process tests and benchmarks.
        .executable(name: "troupe-cluster-node", targets: ["troupe-cluster-node"]),
        // One shared copy of Troupe (libTroupeDynamic.so) for hosts and loadable plugins: a
        // plugin package depends on this product so that it links Troupe instead of carrying
        // its own copy. Use either this or `Troupe` in one program, never both.
        .library(name: "TroupeDynamic", type: .dynamic, targets: ["Troupe"]),
    ],
    traits: [
        .trait(
            name: "InlineURCU",
            description: "Compile liburcu's inline queue fast paths into CTroupe (_LGPL_SOURCE). "
                + "Faster, but links LGPL-2.1 code statically into your binary: "
                + "see the Architecture article (liburcu and its licence)."
        )
    ],
    // swift-log is the core's one dependency; the others are used only by the optional
    // integration products (SwiftPM fetches and builds a package only for the products used).
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        // TroupeCluster's transport.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // Only for TroupeClusterTests' cross-check of the handshake's HMAC (postgres-nio uses it too).
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        // TroupeClusterTLS.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // `swift package generate-documentation` (scripts/docs.sh); a command plugin, never linked.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.4.0"),
        // TroupePersistenceSQLite: SQLite compiled in (no system library).
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        // TroupePersistencePostgres.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CURCU",
            path: "Sources/CURCU",
            pkgConfig: "liburcu-cds",
            providers: [.apt(["liburcu-dev"])]
        ),
        // CTroupe's public header is include/CTroupe.h: the design card keeps it at the top level;
        // Sources/CTroupe/include is a symlink to that folder, where SwiftPM looks for it.
        .target(
            name: "CTroupe",
            dependencies: ["CURCU"],
            path: "Sources/CTroupe",
            exclude: ["models"],
            cSettings: [
                .define("_LGPL_SOURCE", .when(traits: ["InlineURCU"])),
                // The C layer's contract checks (checks.h): on in debug builds, which the test
                // suite uses; compiled out of release builds.
                .define("CTROUPE_DEBUG_CHECKS", .when(configuration: .debug)),
            ]
        ),
        // The pthread-mutex lock shared by Troupe and its optional modules (not a product).
        .target(name: "TroupeLocks", path: "Sources/TroupeLocks"),
        // What a listener's host names (loopback or not), one rule for the observer and the
        // cluster (not a product).
        .target(name: "TroupeAddresses", path: "Sources/TroupeAddresses"),
        .target(
            name: "Troupe",
            dependencies: ["CTroupe", "TroupeLocks", .product(name: "Logging", package: "swift-log")],
            path: "Sources/Troupe"
        ),
        // Optional modules: built on Troupe's public API only (plus the shared lock).
        .target(name: "TroupePromises", dependencies: ["Troupe", "TroupeLocks"], path: "Sources/TroupePromises"),
        .target(name: "TroupePubSub", dependencies: ["Troupe", "TroupeLocks"], path: "Sources/TroupePubSub"),
        .target(name: "TroupeSupervision", dependencies: ["Troupe", "TroupeLocks"], path: "Sources/TroupeSupervision"),
        // Integrations with the Swift server ecosystem: also on Troupe's public API only.
        .target(
            name: "TroupeMetrics",
            dependencies: ["Troupe", "TroupeLocks", .product(name: "CoreMetrics", package: "swift-metrics")],
            path: "Sources/TroupeMetrics"
        ),
        .target(
            name: "TroupeServiceLifecycle",
            dependencies: ["Troupe", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            path: "Sources/TroupeServiceLifecycle"
        ),
        .target(
            name: "TroupeTracing",
            dependencies: ["Troupe", .product(name: "Tracing", package: "swift-distributed-tracing")],
            path: "Sources/TroupeTracing"
        ),
        // SWIM membership as a pure state machine: no threads, clock or network (TroupeCluster's).
        .target(name: "TroupeClusterMembership", path: "Sources/TroupeClusterMembership"),
        // Distributed actors across nodes on Troupe's workers, over SwiftNIO.
        .target(
            name: "TroupeCluster",
            dependencies: [
                "Troupe", "TroupeLocks", "TroupeClusterMembership", "TroupeAddresses",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/TroupeCluster"
        ),
        .target(
            name: "TroupeClusterTLS",
            dependencies: [
                "TroupeCluster",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Sources/TroupeClusterTLS"
        ),
        .testTarget(
            name: "TroupeClusterTLSTests",
            dependencies: [
                "TroupeClusterTLS", "TroupeCluster", "Troupe", "TroupeTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Tests/TroupeClusterTLSTests",
            exclude: ["Certificates"]
        ),
        .executableTarget(
            name: "troupe-cluster-node",
            dependencies: [
                "TroupeCluster", "Troupe", "TroupeObserver", "TroupeClusterEntities", "TroupeVirtualActors",
                "TroupePersistence", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/troupe-cluster-node"
        ),
        // libFuzzer target for TroupeCluster's decoders of untrusted bytes (scripts/fuzz.sh); a
        // normal build replays its corpus instead (not a product).
        .executableTarget(
            name: "troupe-cluster-fuzz",
            dependencies: [
                "TroupeCluster", "TroupeClusterMembership", .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/TroupeClusterFuzz",
            exclude: ["Corpus", "Crashes"]
        ),
        .testTarget(
            name: "TroupeClusterTests",
            dependencies: [
                "TroupeCluster", "TroupeClusterMembership", "Troupe", "TroupeTestSupport", "troupe-cluster-node",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                // HMACSHA256Tests cross-checks the handshake's HMAC against swift-crypto's.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/TroupeClusterTests"
        ),
        // The cluster simulated: the real membership and handshake state machines on thousands of
        // nodes in one process, on virtual time and a simulated network, replayable by seed (the
        // handshake's machine and envelopes are TroupeCluster's, at package access).
        .target(
            name: "TroupeClusterSimulator", dependencies: ["TroupeClusterMembership", "TroupeCluster"],
            path: "Sources/TroupeClusterSimulator"),
        .testTarget(
            name: "TroupeClusterSimulatorTests",
            dependencies: ["TroupeClusterSimulator", "TroupeClusterMembership"],
            path: "Tests/TroupeClusterSimulatorTests"
        ),
        .testTarget(
            name: "TroupeClusterMembershipTests",
            dependencies: ["TroupeClusterMembership"],
            path: "Tests/TroupeClusterMembershipTests"
        ),
        // Deterministic schedules, virtual time and probes for testing actor code.
        // Durable actors: the store protocol, group commit, event-sourced actors (no database).
        .target(
            name: "TroupePersistence",
            dependencies: ["Troupe", "TroupeLocks", .product(name: "Logging", package: "swift-log")],
            path: "Sources/TroupePersistence"
        ),
        .target(
            name: "TroupePersistenceSQLite",
            dependencies: [
                "TroupePersistence", .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/TroupePersistenceSQLite"
        ),
        .target(
            name: "TroupePersistencePostgres",
            dependencies: [
                "TroupePersistence", "TroupeLocks", .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/TroupePersistencePostgres"
        ),
        // The crash tests' child: appends until killed with SIGKILL.
        .executableTarget(
            name: "troupe-persistence-crash-writer",
            dependencies: [
                "TroupePersistence", "TroupePersistenceSQLite", "TroupePersistencePostgres", "Troupe",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/TroupePersistenceCrashWriter"
        ),
        .testTarget(
            name: "TroupePersistenceTests",
            dependencies: [
                "TroupePersistence", "TroupePersistenceSQLite", "TroupePersistencePostgres", "Troupe",
                "TroupeLocks", "TroupeTestSupport",
                "TroupeTesting",
                "troupe-persistence-crash-writer",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TroupePersistenceTests"
        ),
        // Virtual actors: entities addressed by identity, activated on first message, passivated.
        .target(
            name: "TroupeVirtualActors", dependencies: ["Troupe", "TroupeLocks", "TroupePersistence"],
            path: "Sources/TroupeVirtualActors",
            exclude: ["Models"]  // the gate's spin model (scripts/model-check.sh)
        ),
        .testTarget(
            name: "TroupeVirtualActorsTests",
            dependencies: [
                "TroupeVirtualActors", "Troupe", "TroupeTestSupport", "TroupeTesting", "TroupePersistence",
                "TroupePersistenceSQLite",
            ],
            path: "Tests/TroupeVirtualActorsTests"
        ),
        // Virtual actors on TroupeCluster: an identity's home among the nodes holding its kind.
        .target(
            name: "TroupeClusterEntities",
            dependencies: [
                "Troupe", "TroupeLocks", "TroupeCluster", "TroupeClusterMembership", "TroupeVirtualActors",
                "TroupePersistence",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/TroupeClusterEntities",
            exclude: ["Models"]  // the handoff's spin model (scripts/model-check.sh)
        ),
        .testTarget(
            name: "TroupeClusterEntitiesTests",
            dependencies: [
                "TroupeClusterEntities", "TroupeCluster", "TroupeClusterMembership", "TroupeVirtualActors", "Troupe",
                "TroupePersistence", "TroupeTestSupport", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TroupeClusterEntitiesTests"
        ),
        // The observer: on Troupe's public API and SwiftNIO's HTTP/1 and WebSocket support,
        // which TroupeCluster already brings (no package of its own to fetch or build).
        .target(
            name: "TroupeObserver",
            dependencies: [
                "Troupe", "TroupeAddresses",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/TroupeObserver"
        ),
        // HTTPS for the observer (swift-nio-ssl bundles BoringSSL: no system package), apart so
        // that a loopback observer compiles no TLS.
        .target(
            name: "TroupeObserverTLS",
            dependencies: [
                "TroupeObserver",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Sources/TroupeObserverTLS"
        ),
        .testTarget(
            name: "TroupeObserverTLSTests",
            dependencies: [
                "TroupeObserverTLS", "TroupeObserver", "Troupe", "TroupeTestSupport", "troupe-observe",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Tests/TroupeObserverTLSTests",
            exclude: ["Certificates"]
        ),
        // The observer's terminal view: polls the same endpoint as the page.
        .executableTarget(
            name: "troupe-observe",
            dependencies: [
                // For `https://` observers (left out of CI's sanitizer builds, like the TLS layers:
                // the view then refuses such URLs with a message).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Sources/troupe-observe"),
        .testTarget(
            name: "TroupeObserverTests",
            dependencies: ["TroupeObserver", "Troupe", "TroupeTestSupport", "troupe-observe"],
            path: "Tests/TroupeObserverTests"
        ),
        .target(
            name: "TroupeTesting", dependencies: ["Troupe", "TroupeLocks", "TroupePersistence"],
            path: "Sources/TroupeTesting"),
        .testTarget(
            name: "TroupeTestingTests",
            dependencies: ["TroupeTesting", "Troupe", "TroupePubSub", "TroupeTestSupport"],
            path: "Tests/TroupeTestingTests"
        ),
        .testTarget(
            name: "TroupeTracingTests",
            dependencies: [
                "TroupeTracing", "Troupe", "TroupeTestSupport",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            path: "Tests/TroupeTracingTests"
        ),
        .testTarget(
            name: "TroupeMetricsTests",
            dependencies: [
                "TroupeMetrics", "Troupe", "TroupeTestSupport",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            path: "Tests/TroupeMetricsTests"
        ),
        .testTarget(
            name: "TroupeServiceLifecycleTests",
            dependencies: [
                "TroupeServiceLifecycle", "Troupe", "TroupeTestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ],
            path: "Tests/TroupeServiceLifecycleTests"
        ),
        .testTarget(
            name: "TroupeSupervisionTests",
            dependencies: ["TroupeSupervision", "Troupe", "TroupeTestSupport", "TroupeTesting"],
            path: "Tests/TroupeSupervisionTests"
        ),
        .testTarget(
            name: "TroupePromisesTests",
            dependencies: ["TroupePromises", "Troupe", "TroupeTestSupport"],
            path: "Tests/TroupePromisesTests"
        ),
        .testTarget(
            name: "TroupePubSubTests",
            dependencies: ["TroupePubSub", "Troupe", "TroupeTestSupport"],
            path: "Tests/TroupePubSubTests"
        ),
        .target(
            name: "TroupeTestSupport",
            dependencies: ["Troupe", "TroupeLocks"],
            path: "Tests/TroupeTestSupport"
        ),
        // Mirrors Sources/Troupe (Mailbox/, Scheduler/, Cell/, Actor/, Ask/, Timing/, System/,
        // Pools/); white-box tests of the pure parts through `@testable import Troupe`, and of
        // the event count through CTroupe.
        .testTarget(
            name: "TroupeTests",
            dependencies: ["Troupe", "CTroupe", "TroupeTestSupport"],
            path: "Tests/TroupeTests"
        ),
        .testTarget(
            name: "TroupeLocksTests",
            dependencies: ["TroupeLocks", "TroupeTestSupport"],
            path: "Tests/TroupeLocksTests"
        ),
        .testTarget(
            name: "TroupeStressTests",
            dependencies: ["Troupe", "TroupeTestSupport"],
            path: "Tests/TroupeStressTests"
        ),
        // Mirrors Sources/Troupe/Plugins: providers, services, plugins and their loading.
        .testTarget(
            name: "TroupePluginsTests",
            dependencies: ["Troupe", "TroupeTestSupport"],
            path: "Tests/TroupePluginsTests",
            // Plugins compiled against the test binary's Troupe resolve their Troupe symbols
            // from it, so the binary exports them.
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// CI's sanitizer stages build a subset (TROUPE_CI_SANITIZER_BUILD=1): without TroupeClusterTLS and
// TroupeObserverTLS (thin Swift layers over swift-nio-ssl) and TroupePersistencePostgres (a thin
// layer over postgres-nio), all tested in the plain test stage. Leaving them out spares each sanitized build
// two copies of BoringSSL (swift-nio-ssl's, and swift-crypto's through postgres-nio), several
// minutes each on CI's 2 cores; TroupeClusterTests' cross-check of the handshake's HMAC against
// swift-crypto goes too (its published test vectors stay). TroupeClusterSimulator goes too: safe
// Swift on virtual time (no pointer, no thread of its own), its seeded schedules were 111 s of
// the ASan stage's 252 s of tests (2026-12-02) and are run in the test stage. Users never set this.
if Context.environment["TROUPE_CI_SANITIZER_BUILD"] == "1" {
    let leftOut: Set = [
        "TroupeClusterTLS", "TroupeClusterTLSTests", "TroupeObserverTLS", "TroupeObserverTLSTests",
        "TroupePersistencePostgres", "TroupeClusterSimulator", "TroupeClusterSimulatorTests",
    ]
    package.products.removeAll { leftOut.contains($0.name) }
    package.targets.removeAll { leftOut.contains($0.name) }
    for target in package.targets {
        target.dependencies.removeAll { $0.isLeftOutOfSanitizerBuilds(leftOut) }
        // The tests and the crash writer compile their PostgreSQL and swift-crypto parts out.
        if target.type == .test || target.name == "troupe-persistence-crash-writer" {
            target.swiftSettings = (target.swiftSettings ?? []) + [.define("TROUPE_CI_SANITIZER_BUILD")]
        }
    }
    package.dependencies.removeAll { $0.kind.isLeftOutOfSanitizerBuilds }
}

extension Target.Dependency {
    fileprivate func isLeftOutOfSanitizerBuilds(_ targets: Set<String>) -> Bool {
        switch self {
        case .targetItem(let name, _), .byNameItem(let name, _): return targets.contains(name)
        case .productItem(let name, let package, _, _):
            return ["swift-nio-ssl", "postgres-nio", "swift-crypto"].contains(package ?? "") || targets.contains(name)
        @unknown default: return false
        }
    }
}

extension Package.Dependency.Kind {
    fileprivate var isLeftOutOfSanitizerBuilds: Bool {
        if case .sourceControl(_, let location, _) = self {
            return ["/swift-nio-ssl.git", "/postgres-nio.git", "/swift-crypto.git"].contains { location.hasSuffix($0) }
        }
        return false
    }
}
