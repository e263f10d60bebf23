// swift-tools-version: 6.2
// Troupe's benchmarks, a package of their own so that a package depending on Troupe never
// resolves their dependencies (the histogram) or sees their products. From the repository root:
//   swift run --package-path Benchmarks -c release troupe-bench [--quick|--json|--filter NAME]
import PackageDescription

let package = Package(
    name: "TroupeBenchmarks",
    traits: [
        .trait(
            name: "PostgreSQL",
            description: "`troupe-bench persistence --store postgres` (postgres-nio, whose swift-crypto compiles a "
                + "copy of BoringSSL). CI's quick runs build without it: --disable-default-traits."
        ),
        .trait(
            name: "TLS",
            description: "`troupe-bench cluster`'s TLS rows (TroupeClusterTLS and swift-nio-ssl, which compiles a "
                + "copy of BoringSSL). CI's quick runs build without it: --disable-default-traits."
        ),
        .default(enabledTraits: ["PostgreSQL", "TLS"]),
    ],
    dependencies: [
        .package(name: "Troupe", path: ".."),
        // Latency percentiles in troupe-bench.
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        // The command line.
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.3.0"),
        // The tracing rows' ServiceContext.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        // The cluster rows' raw NIO baseline.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // The persistence rows' raw SQLite baseline.
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        // The persistence rows on PostgreSQL and their raw baseline (the PostgreSQL trait).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // The TLS rows' raw NIO TLS baseline (the TLS trait).
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        // malloc counting for the allocation guard (C, interposes the malloc family).
        .target(name: "CBenchSupport", path: "CBenchSupport"),
        .executableTarget(
            name: "troupe-bench",
            dependencies: [
                .product(name: "Troupe", package: "Troupe"), .product(name: "TroupePromises", package: "Troupe"),
                .product(name: "TroupePubSub", package: "Troupe"), "CBenchSupport",
                .product(name: "TroupeTracing", package: "Troupe"),
                .product(name: "TroupeCluster", package: "Troupe"),
                .product(name: "TroupeClusterTLS", package: "Troupe", condition: .when(traits: ["TLS"])),
                .product(name: "TroupePersistence", package: "Troupe"),
                .product(name: "TroupePersistenceSQLite", package: "Troupe"),
                .product(name: "TroupeVirtualActors", package: "Troupe"),
                .product(name: "TroupeClusterEntities", package: "Troupe"),
                .product(name: "TroupeClusterSimulator", package: "Troupe"),
                .product(name: "TroupeTesting", package: "Troupe"),
                .product(name: "TroupeObserver", package: "Troupe"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(
                    name: "TroupePersistencePostgres", package: "Troupe", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["TLS"])),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "troupe-bench"
        ),
        .executableTarget(
            name: "troupe-batch-sweep", dependencies: [.product(name: "Troupe", package: "Troupe")],
            path: "batch-sweep"),
    ],
    swiftLanguageModes: [.v6]
)
