// swift-tools-version: 6.2
// An HTTP service on Hummingbird whose handlers ask Troupe actors: a package of its own, so that
// Troupe's users never resolve its dependencies. From the repository root:
//   swift run --package-path Examples/ShopService -c release shop-service
//   Examples/ShopService/load.sh        # wrk on loopback: requests/s and latency percentiles
import PackageDescription

let package = Package(
    name: "ShopService",
    dependencies: [
        .package(name: "Troupe", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
    ],
    targets: [
        // The actors: sessions, the price backend pool, the activity feed (no HTTP here).
        .target(
            name: "ShopActors",
            dependencies: [
                .product(name: "Troupe", package: "Troupe"),
                .product(name: "TroupePubSub", package: "Troupe"),
                .product(name: "TroupeSupervision", package: "Troupe"),
            ],
            path: "Sources/ShopActors"
        ),
        .executableTarget(
            name: "shop-service",
            dependencies: [
                "ShopActors",
                .product(name: "Troupe", package: "Troupe"),
                .product(name: "TroupeMetrics", package: "Troupe"),
                .product(name: "TroupeObserver", package: "Troupe"),
                .product(name: "TroupeServiceLifecycle", package: "Troupe"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/ShopService"
        ),
        .testTarget(
            name: "ShopActorsTests",
            dependencies: ["ShopActors", .product(name: "Troupe", package: "Troupe")],
            path: "Tests/ShopActorsTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
