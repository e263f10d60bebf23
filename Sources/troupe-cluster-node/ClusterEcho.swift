import Distributed
import TroupeCluster

/// The actor every `troupe-cluster-node` checks in under ``echoKey``: enough to call a node
/// from another process.
distributed actor ClusterEcho: ClusterActor {
    distributed func echo(_ bytes: [UInt8]) -> [UInt8] { bytes }

    /// The node this actor runs on, as text.
    distributed func whereAreYou() -> String { "\(actorSystem.node)" }
}

let echoKey = ReceptionKey(ClusterEcho.self, id: "echo")
