import Foundation
import Testing
import TroupeTestSupport

@testable import TroupeCluster

/// Three network namespaces, tpa, tpb and tpc, each with one address in the loopback range
/// (127.77.0.1–3) and a veth pair to each of the others, so that one pair can be cut. The
/// namespaces lose the usual `127.0.0.0/8` local route, so that an address without a route is
/// unreachable rather than refused by the namespace's own loopback (a refusal would count as
/// proof that the node is gone). Root only.
struct PartitionLab {
    static var available: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip")
    }

    static let names = ["a", "b", "c"]

    static func address(_ name: String) -> String { "127.77.0.\(names.firstIndex(of: name)! + 1)" }

    @discardableResult
    static func ip(_ arguments: String...) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    static func run(_ arguments: String...) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SetupFailed(description: "ip \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
    }

    struct SetupFailed: Error, CustomStringConvertible { let description: String }

    init() throws {
        Self.tearDown()
        for name in Self.names {
            let ns = "tp\(name)"
            try Self.run("netns", "add", ns)
            try Self.run("netns", "exec", ns, "ip", "link", "set", "lo", "up")
            try Self.run("netns", "exec", ns, "sysctl", "-qw", "net.ipv4.conf.all.route_localnet=1")
            try Self.run(
                "netns", "exec", ns, "ip", "route", "del", "local", "127.0.0.0/8", "dev", "lo", "table", "local")
            try Self.run("netns", "exec", ns, "ip", "addr", "add", "\(Self.address(name))/32", "dev", "lo")
        }
        for (first, second) in [("a", "b"), ("a", "c"), ("b", "c")] {
            try Self.run(
                "link", "add", "v\(first)\(second)", "netns", "tp\(first)", "type", "veth", "peer", "name",
                "v\(second)\(first)", "netns", "tp\(second)")
            for (this, other) in [(first, second), (second, first)] {
                let device = "v\(this)\(other)"
                try Self.run("netns", "exec", "tp\(this)", "ip", "link", "set", device, "up")
                try Self.run("netns", "exec", "tp\(this)", "sysctl", "-qw", "net.ipv4.conf.\(device).route_localnet=1")
                try Self.run(
                    "netns", "exec", "tp\(this)", "ip", "route", "add", "\(Self.address(other))/32", "dev", device,
                    "src",
                    Self.address(this))
            }
        }
    }

    /// Takes both ends of the link between `first` and `second` down.
    func cut(_ first: String, _ second: String) throws {
        try Self.run("netns", "exec", "tp\(first)", "ip", "link", "set", "v\(first)\(second)", "down")
        try Self.run("netns", "exec", "tp\(second)", "ip", "link", "set", "v\(second)\(first)", "down")
    }

    static func tearDown() {
        for name in names { ip("netns", "del", "tp\(name)") }
    }
}

@Suite(
    "Network partitions between namespaces (root only)", .serialized, .enabled(if: PartitionLab.available))
struct PartitionTests {
    @Test func aCutLinkIsBridgedByIndirectProbesAndAnIsolatedNodeGoesDown() async throws {
        let lab = try PartitionLab()
        defer { PartitionLab.tearDown() }
        let seed = (host: PartitionLab.address("a"), port: 7411)
        let a = try NodeProcess(host: seed.host, port: seed.port, seed: nil, namespace: "tpa")
        let b = try NodeProcess(host: PartitionLab.address("b"), port: 7411, seed: seed, namespace: "tpb")
        let c = try NodeProcess(host: PartitionLab.address("c"), port: 7411, seed: seed, namespace: "tpc")
        defer { for node in [a, b, c] { node.stop() } }
        let aNode = try #require(await a.node())
        let bNode = try #require(await b.node())
        let cNode = try #require(await c.node())
        await waitUntil(timeout: .seconds(60), "everyone sees everyone") {
            [a, b, c].allSatisfy { node in [aNode, bNode, cNode].allSatisfy { node.saw($0, "alive") } }
        }

        // a and b can no longer reach each other; c reaches both. SWIM's indirect probes go
        // through c, so neither is declared unreachable, let alone down, over 30 probe periods.
        try lab.cut("a", "b")
        try await Task.sleep(for: .seconds(6))
        #expect(!a.saw(bNode, "unreachable") && !a.saw(bNode, "down"))
        #expect(!b.saw(aNode, "unreachable") && !b.saw(aNode, "down"))

        // Cut a from c too: a is alone, and b and c (and a, of them) see it go down.
        try lab.cut("a", "c")
        await waitUntil(timeout: .seconds(60), "b and c see the isolated node down, and it them") {
            b.saw(aNode, "down") && c.saw(aNode, "down") && a.saw(bNode, "down") && a.saw(cNode, "down")
        }
        #expect(!b.saw(cNode, "down") && !c.saw(bNode, "down"), "b and c still have each other")
    }
}
