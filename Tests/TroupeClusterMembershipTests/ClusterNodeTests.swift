import Testing
import TroupeClusterMembership

/// A member's identity as a key: equal only when uid, port and host all are, whatever the hash
/// leaves out.
@Suite("ClusterNode: equality and hashing")
struct ClusterNodeTests {
    @Test func nodesAreEqualOnlyWhenUidPortAndHostAre() {
        let node = ClusterNode(host: "10.0.0.1", port: 7337, uid: 42)
        #expect(node == ClusterNode(host: "10.0.0.1", port: 7337, uid: 42))
        #expect(node.hashValue == ClusterNode(host: "10.0.0.1", port: 7337, uid: 42).hashValue)
        #expect(node != ClusterNode(host: "10.0.0.2", port: 7337, uid: 42))
        #expect(node != ClusterNode(host: "10.0.0.1", port: 7338, uid: 42))
        #expect(node != ClusterNode(host: "10.0.0.1", port: 7337, uid: 43))
    }

    @Test func aTableKeepsMembersThatShareAUidAndAPortApart() {
        // The hash leaves the host out: these collide, and the table must still tell them apart.
        let hosts = (0..<200).map { "10.0.\($0 / 250).\($0 % 250)" }
        var statuses: [ClusterNode: ClusterMemberStatus] = [:]
        for (index, host) in hosts.enumerated() {
            statuses[ClusterNode(host: host, port: 7337, uid: 1)] = .alive(incarnation: UInt64(index))
        }
        #expect(statuses.count == hosts.count)
        for (index, host) in hosts.enumerated() {
            #expect(statuses[ClusterNode(host: host, port: 7337, uid: 1)] == .alive(incarnation: UInt64(index)))
        }
        #expect(statuses[ClusterNode(host: "10.0.9.9", port: 7337, uid: 1)] == nil)
        let set = Set(hosts.map { ClusterNode(host: $0, port: 7337, uid: 1) })
        #expect(set.count == hosts.count)
    }
}
