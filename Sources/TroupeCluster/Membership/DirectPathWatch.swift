import TroupeClusterMembership

/// Counts, per member, the probes in a row that only other members answered, and says when a
/// member's connection should be closed and dialled afresh.
///
/// A member answered only through helpers is up, but its direct connection delivers nothing:
/// after a partition heals, a TCP connection whose segment is waiting to be retransmitted
/// holds every later frame behind it, for up to two minutes of exponential backoff, while a
/// new connection would carry them at once (the cluster simulator showed such a connection
/// holding a pair of nodes' traffic for 102 s). SWIM itself keeps the member alive through
/// the helpers, so nothing else would notice; calls to it would time out.
///
/// Pure state, in the membership actor: `observe` reads the state machine's directives (a
/// direct ack resets the count, an answer through a helper adds one), and any frame heard
/// straight from the member resets it (``heardDirectly(_:)``).
struct DirectPathWatch {
    /// Answers through helpers in a row that close the connection; 0: never.
    let limit: Int
    private var inARow: [ClusterNode: Int] = [:]

    init(limit: Int) { self.limit = limit }

    /// The members whose connection to close now (each once; its count starts again).
    mutating func observe(_ directives: [SWIMDirective]) -> [ClusterNode] {
        guard limit > 0 else { return [] }
        var reconnect: [ClusterNode] = []
        for directive in directives {
            switch directive {
            case .measured(_, let member):
                inARow[member] = nil
            case .measuredIndirectly(_, let member, _):
                let count = (inARow[member] ?? 0) + 1
                if count >= limit {
                    inARow[member] = nil
                    reconnect.append(member)
                } else {
                    inARow[member] = count
                }
            case .event(let event) where event.status == .down:
                inARow[event.member] = nil
            case .send, .event, .discovered:
                break
            }
        }
        return reconnect
    }

    /// A frame came straight from `member`: its connection delivers.
    mutating func heardDirectly(_ member: ClusterNode) { inARow[member] = nil }

    /// The members with a count now (for tests).
    var counted: [ClusterNode: Int] { inARow }
}
