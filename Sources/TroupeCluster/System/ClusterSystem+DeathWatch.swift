import Distributed
import Synchronization
import TroupeClusterMembership

/// The notice a death watch delivers, once.
public struct ClusterTermination: Sendable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        /// The actor deinitialised on its node (or was already gone when the watch began).
        case stopped
        /// Its node went down: the actor is gone with it, whatever it was doing.
        case nodeDown
        /// This cluster system shut down; nothing more will be known.
        case watcherShutDown

        public var description: String {
            switch self {
            case .stopped: "stopped"
            case .nodeDown: "node down"
            case .watcherShutDown: "watcher shut down"
            }
        }
    }

    public let actor: ClusterActorID
    public let reason: Reason

    public var description: String { "\(actor) terminated (\(reason))" }
}

/// A death watch in place; ``cancel()`` ends it without a notice.
public final class ClusterWatch: Sendable {
    let system: ClusterSystem
    let actor: ClusterActorID
    let token: UInt64

    init(system: ClusterSystem, actor: ClusterActorID, token: UInt64) {
        self.system = system
        self.actor = actor
        self.token = token
    }

    /// Ends the watch; the callback will not be called (unless it is running now).
    public func cancel() { system.unwatch(actor, token: token) }
}

/// Watches by watched actor, and which nodes watch each of this node's actors.
struct WatchTable {
    var watchers: [ClusterActorID: [UInt64: @Sendable (ClusterTermination) -> Void]] = [:]
    var nextToken: UInt64 = 0
    var watchedBy: [UInt64: Set<ClusterNode>] = [:]
    var finished = false
}

extension ClusterSystem {
    /// Calls `onTerminated` once, when `actor` is gone: it deinitialised on its node
    /// (``ClusterTermination/Reason/stopped``), or its node went down
    /// (``ClusterTermination/Reason/nodeDown``). An actor already gone is reported at once.
    /// `onTerminated` runs on whichever thread learns of it; keep it short. Any thread.
    @discardableResult
    public func watch<Act: DistributedActor>(
        _ actor: Act, onTerminated: @escaping @Sendable (ClusterTermination) -> Void
    ) -> ClusterWatch where Act.ID == ClusterActorID {
        let id = actor.id
        let (token, first, finished) = watchTable.withLock { table in
            table.nextToken += 1
            let first = table.watchers[id] == nil
            if !table.finished { table.watchers[id, default: [:]][table.nextToken] = onTerminated }
            return (table.nextToken, first, table.finished)
        }
        let watch = ClusterWatch(system: self, actor: id, token: token)
        if finished {
            onTerminated(ClusterTermination(actor: id, reason: .watcherShutDown))
        } else if id.node == node {
            if localActor(number: id.number) == nil { fire(id, reason: .stopped) }
        } else if isDown(id.node) {
            fire(id, reason: .nodeDown)
        } else if first {
            send(.watch(actorNumber: id.number), to: id.node)
        }
        return watch
    }

    func unwatch(_ id: ClusterActorID, token: UInt64) {
        let last = watchTable.withLock { table -> Bool in
            guard table.watchers[id]?.removeValue(forKey: token) != nil else { return false }
            if table.watchers[id]!.isEmpty {
                table.watchers[id] = nil
                return true
            }
            return false
        }
        if last && id.node != node { send(.unwatch(actorNumber: id.number), to: id.node) }
    }

    /// Calls and removes every watch on `id`.
    private func fire(_ id: ClusterActorID, reason: ClusterTermination.Reason) {
        let callbacks = watchTable.withLock { $0.watchers.removeValue(forKey: id) } ?? [:]
        let termination = ClusterTermination(actor: id, reason: reason)
        for callback in callbacks.values { callback(termination) }
    }

    /// A local actor resigned its id: its receptionist entries go, and its watchers (here and
    /// on other nodes) are told.
    func actorResigned(_ id: ClusterActorID) {
        checkOutEverywhere(id.number)
        fire(id, reason: .stopped)
        let watchingNodes = watchTable.withLock { $0.watchedBy.removeValue(forKey: id.number) } ?? []
        for peer in watchingNodes { send(.terminated(actorNumber: id.number), to: peer) }
    }

    func remoteWatch(_ number: UInt64, by peer: ClusterNode) {
        guard localActor(number: number) != nil else { return send(.terminated(actorNumber: number), to: peer) }
        watchTable.withLock { _ = $0.watchedBy[number, default: []].insert(peer) }
        // The actor may have resigned between the check and the insertion.
        if localActor(number: number) == nil {
            let stillWatched = watchTable.withLock { $0.watchedBy.removeValue(forKey: number) != nil }
            if stillWatched { send(.terminated(actorNumber: number), to: peer) }
        }
    }

    func remoteUnwatch(_ number: UInt64, by peer: ClusterNode) {
        watchTable.withLock { table in
            table.watchedBy[number]?.remove(peer)
            if table.watchedBy[number]?.isEmpty == true { table.watchedBy[number] = nil }
        }
    }

    func remoteActorTerminated(_ id: ClusterActorID, reason: ClusterTermination.Reason) {
        fire(id, reason: reason)
    }

    /// `member` is down: every watch on its actors fires with ``ClusterTermination/Reason/nodeDown``.
    func nodeDownForWatches(_ member: ClusterNode) {
        let ids = watchTable.withLock { table in
            for number in table.watchedBy.keys { table.watchedBy[number]?.remove(member) }
            return table.watchers.keys.filter { $0.node == member }
        }
        for id in ids { fire(id, reason: .nodeDown) }
    }

    func finishWatches() {
        let all = watchTable.withLock { table in
            table.finished = true
            defer { table.watchers = [:] }
            return table.watchers
        }
        for (id, callbacks) in all {
            for callback in callbacks.values { callback(ClusterTermination(actor: id, reason: .watcherShutDown)) }
        }
    }
}
