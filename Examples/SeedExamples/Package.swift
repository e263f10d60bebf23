// swift-tools-version: 6.2
import PackageDescription

// Four runnable programs that show, on Troupe, what the READMEs of four older actor libraries
// promise their users (see README.md). Each program checks its own results and exits non-zero
// when the runtime does not behave as described.
let package = Package(
    name: "TroupeSeedExamples",
    products: [
        .executable(name: "oscar-sessions", targets: ["OscarSessions"]),
        .executable(name: "actorkit-workers", targets: ["ActorKitWorkers"]),
        .executable(name: "nnkit-observers", targets: ["NNKitObservers"]),
        .executable(name: "reactor-flow", targets: ["ReactorFlow"]),
    ],
    dependencies: [
        .package(name: "Troupe", path: "../..")
    ],
    targets: [
        // fail, check, step, waitUntil: how every program narrates and checks itself.
        .target(name: "ExampleSupport", path: "Sources/ExampleSupport"),
        .executableTarget(
            name: "OscarSessions",
            dependencies: ["ExampleSupport", .product(name: "Troupe", package: "Troupe")],
            path: "Sources/OscarSessions"
        ),
        .executableTarget(
            name: "ActorKitWorkers",
            dependencies: [
                "ExampleSupport",
                .product(name: "Troupe", package: "Troupe"),
                .product(name: "TroupePromises", package: "Troupe"),
                .product(name: "TroupePubSub", package: "Troupe"),
                .product(name: "TroupeSupervision", package: "Troupe"),
            ],
            path: "Sources/ActorKitWorkers"
        ),
        .executableTarget(
            name: "NNKitObservers",
            dependencies: [
                "ExampleSupport",
                .product(name: "Troupe", package: "Troupe"),
                .product(name: "TroupePromises", package: "Troupe"),
                .product(name: "TroupePubSub", package: "Troupe"),
            ],
            path: "Sources/NNKitObservers"
        ),
        .executableTarget(
            name: "ReactorFlow",
            dependencies: [
                "ExampleSupport",
                .product(name: "Troupe", package: "Troupe"),
                .product(name: "TroupePersistence", package: "Troupe"),
                .product(name: "TroupePersistenceSQLite", package: "Troupe"),
                .product(name: "TroupePromises", package: "Troupe"),
            ],
            path: "Sources/ReactorFlow"
        ),
    ],
    swiftLanguageModes: [.v6]
)
