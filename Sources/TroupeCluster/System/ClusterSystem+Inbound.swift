import Distributed
import NIOCore
import Troupe
import TroupeClusterMembership

extension ClusterSystem {
    /// An envelope on an established association. Called in the connection's delivery order,
    /// on the transport's thread: nothing here blocks. Distributed methods run in tasks on
    /// Troupe's executors; an invocation's task, and the caller a reply resumes when it waits on
    /// a Troupe executor, run their turns right here when those executors are idle
    /// (``ActorSystem/runningTurnsHere(maximumTurns:_:)``): a call then costs no hand-off to a
    /// worker, and the reply is written from the transport's own thread.
    func handle(_ envelope: WireEnvelope, from association: Association, peer: ClusterNode) {
        switch envelope {
        case .invocation(let invocation):
            association.callsReceived.wrappingAdd(1, ordering: .relaxed)
            actorSystem.runningTurnsHere { execute(invocation, from: association) }
        case .reply(let reply):
            actorSystem.runningTurnsHere { completeCall(reply.callID, with: .success(reply.outcome)) }
        case .membership(let message):
            tellMembership(.swim(message, from: peer))
        case .receptionist(let update):
            // Only from the peer's current association. When both nodes dial at once, each
            // sends on whichever association is current for it at the time, then a snapshot on
            // the one both keep; frames still on their way over the retired one are older than
            // that snapshot, and applied after it they replaced its entries with stale ones
            // (seen: a region's host listed, then gone for good). Whatever the peer sent there
            // is in the snapshot it sent on the association kept.
            guard isCurrent(association, for: peer) else { return }
            applyReceptionistUpdate(update, from: peer)
        case .watch(let number):
            remoteWatch(number, by: peer)
        case .unwatch(let number):
            remoteUnwatch(number, by: peer)
        case .terminated(let number):
            remoteActorTerminated(ClusterActorID(node: peer, number: number), reason: .stopped)
        case .leaving:
            logger.info("\(peer) is leaving")
            memberTable.withLock { _ = $0.leaving.insert(peer) }
            tellMembership(.leaving(peer))
        case .hello, .challenge, .proof, .refused:
            protocolViolation(association, reason: "\(envelope.kindName) after the handshake")
        }
    }

    private func execute(_ invocation: WireEnvelope.Invocation, from association: Association) {
        guard invocation.recipientUID == node.uid, let actor = localActor(number: invocation.recipientNumber) else {
            let failure = WireEnvelope.RemoteFailure(code: .unknownActor, typeName: "", message: "")
            return association.send(.reply(WireEnvelope.Reply(callID: invocation.callID, outcome: .failure(failure))))
        }
        metrics.invocationsReceived.increment()
        let handler = ClusterResultHandler(system: self, callID: invocation.callID, association: association)
        var decoder = ClusterInvocationDecoder(system: self, invocation: invocation)
        if case .resolved(let target) = association.lastTarget(named: invocation.target, in: targets) {
            Task(executorPreference: actorSystem.taskExecutor) {
                await target.execute(on: actor, decoder: &decoder, handler: handler)
            }
            return
        }
        let target = RemoteCallTarget(invocation.target)
        Task(executorPreference: actorSystem.taskExecutor) {
            do {
                try await self.executeDistributedTarget(
                    on: actor, target: target, invocationDecoder: &decoder, handler: handler)
            } catch {
                // The runtime could not make the call (unknown target, arguments that do not
                // decode): the result handler was not called.
                handler.reply(throwing: error)
            }
        }
    }
}
