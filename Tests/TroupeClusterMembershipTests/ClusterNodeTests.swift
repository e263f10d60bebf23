import Foundation
import Testing
import TroupeClusterMembership

/// A member's identity as a key: equal only when uid, port and host all are; encoded as those
/// three fields (the host's hash, taken at init, stays in the process).
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
        // Only the host tells these apart (the hash takes it once, at init).
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

    @Test func aDecodedNodeEqualsTheEncodedOneAndEncodesOnlyItsThreeFields() throws {
        let node = ClusterNode(host: "10.0.0.1", port: 7337, uid: 42)
        let data = try JSONEncoder().encode(node)
        let decoded = try JSONDecoder().decode(ClusterNode.self, from: data)
        #expect(decoded == node)
        #expect(decoded.hashValue == node.hashValue)
        let fields = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        #expect(fields.map { Set($0.keys) } == ["host", "port", "uid"])
    }
}
