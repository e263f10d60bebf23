// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Troupe",
    products: [
        .library(name: "Troupe", targets: ["Troupe"]),
        .library(name: "TroupePromises", targets: ["TroupePromises"]),
        .library(name: "TroupePubSub", targets: ["TroupePubSub"]),
        .library(name: "TroupeSupervision", targets: ["TroupeSupervision"]),
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
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2")
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
            cSettings: [.define("_LGPL_SOURCE", .when(traits: ["InlineURCU"]))]
        ),
        // The pthread-mutex lock shared by Troupe and its optional modules (not a product).
        .target(name: "TroupeLocks", path: "Sources/TroupeLocks"),
        .target(
            name: "Troupe",
            dependencies: ["CTroupe", "TroupeLocks", .product(name: "Logging", package: "swift-log")],
            path: "Sources/Troupe"
        ),
        // Optional modules: built on Troupe's public API only (plus the shared lock).
        .target(name: "TroupePromises", dependencies: ["Troupe", "TroupeLocks"], path: "Sources/TroupePromises"),
        .target(name: "TroupePubSub", dependencies: ["Troupe", "TroupeLocks"], path: "Sources/TroupePubSub"),
        .target(name: "TroupeSupervision", dependencies: ["Troupe", "TroupeLocks"], path: "Sources/TroupeSupervision"),
        .testTarget(
            name: "TroupeSupervisionTests",
            dependencies: ["TroupeSupervision", "Troupe", "TroupeTestSupport"],
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
