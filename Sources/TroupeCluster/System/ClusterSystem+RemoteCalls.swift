import Distributed
import NIOCore
import Synchronization
import Troupe
import TroupeClusterMembership

/// Remote calls waiting for their reply, by call id.
struct PendingCalls {
    var byID: [UInt64: PendingCall] = [:]
}

/// A call waiting for its reply. Its continuation is resumed exactly once, by whoever removes
/// the call from ``PendingCalls`` (the reply, the deadline sweep, a cancellation, a lost
/// connection or the shutdown): removal under the lock is what makes it once, so the
/// continuation need not check it again (an unsafe one saves the checked one's allocation).
struct PendingCall {
    let node: ClusterNode
    let continuation: UnsafeContinuation<WireEnvelope.Reply.Outcome, any Error>
    /// When the call times out, on the actor system's clock (``ActorSystem/uptime``).
    let deadline: Duration
    /// The time limit the call was given (for the error).
    let timeout: Duration
    let target: String
}

extension ClusterSystem {
    /// The time limit of remote calls made in `body` (on this task and the tasks it creates),
    /// instead of ``ClusterSettings/callTimeout``:
    ///
    /// ```swift
    /// let report = try await ClusterSystem.withCallTimeout(.seconds(30)) {
    ///     try await analyst.longReport()
    /// }
    /// ```
    ///
    /// A call that is still waiting when its limit passes fails with
    /// ``ClusterCallError/timedOut(target:after:)`` (the remote node may still run it). The
    /// limit must be positive.
    public static func withCallTimeout<Result>(
        _ timeout: Duration, isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> Result
    ) async rethrows -> Result {
        precondition(timeout > .zero, "ClusterSystem.withCallTimeout needs a positive duration, got \(timeout)")
        return try await $callTimeoutOverride.withValue(timeout, operation: body, isolation: isolation)
    }

    /// The limit set by ``withCallTimeout(_:isolation:_:)``, if any.
    @TaskLocal static var callTimeoutOverride: Duration?
}

extension ClusterSystem {
    public func remoteCall<Act, Err, Res>(
        on actor: Act, target: RemoteCallTarget, invocation: inout ClusterInvocationEncoder,
        throwing: Err.Type, returning: Res.Type
    ) async throws -> Res where Act: DistributedActor, Act.ID == ClusterActorID, Err: Error, Res: Codable {
        let outcome = try await call(actor.id, target: target, invocation: invocation)
        switch outcome {
        case .value(let bytes):
            do {
                return try decodeValue(Res.self, from: bytes)
            } catch {
                throw ClusterCallError.serialization(type: String(reflecting: Res.self), reason: "\(error)")
            }
        case .void:
            throw ClusterCallError.invalidInvocation(
                "\(target) returned nothing where \(String(reflecting: Res.self)) was expected")
        case .failure(let failure):
            throw ClusterCallError(failure, recipient: actor.id)
        }
    }

    public func remoteCallVoid<Act, Err>(
        on actor: Act, target: RemoteCallTarget, invocation: inout ClusterInvocationEncoder, throwing: Err.Type
    ) async throws where Act: DistributedActor, Act.ID == ClusterActorID, Err: Error {
        let outcome = try await call(actor.id, target: target, invocation: invocation)
        if case .failure(let failure) = outcome { throw ClusterCallError(failure, recipient: actor.id) }
    }

    /// Sends the invocation and waits for its reply, at most ``ClusterSettings/callTimeout``
    /// or the limit of an enclosing ``withCallTimeout(_:isolation:_:)`` (measured on the actor
    /// system's timer). Cancelling the calling task fails the call with
    /// `CancellationError` (the remote node may still run it).
    ///
    /// `nonisolated(nonsending)`: it runs on the caller's executor (as the cancellation handler
    /// and the continuation inside it do), so entering and leaving it switches no executor; each
    /// switch asks the runtime for the task's preferred executor, under a lock, when the caller
    /// runs on Troupe's task executor.
    nonisolated(nonsending) private func call(
        _ recipient: ClusterActorID, target: RemoteCallTarget, invocation: ClusterInvocationEncoder
    ) async throws -> WireEnvelope.Reply.Outcome {
        guard !shutDown else { throw ClusterCallError.systemShutDown }
        // Without the actor system nothing would time the call out (its timer has stopped):
        // the cluster shuts down with it (see `sweepDeadlines`).
        guard !actorSystem.isShuttingDown else { throw ClusterCallError.systemShutDown }
        let timeout = Self.callTimeoutOverride ?? settings.callTimeout
        let association: Association
        if let current = currentAssociation(to: recipient.node) {
            association = current
        } else {
            association = try await self.association(to: recipient.node)
        }
        let callID = nextCallID.wrappingAdd(1, ordering: .relaxed).newValue
        let envelope = WireEnvelope.invocation(
            WireEnvelope.Invocation(
                callID: callID, recipientUID: recipient.node.uid, recipientNumber: recipient.number,
                target: target.identifier, genericSubstitutions: invocation.genericSubstitutions,
                arguments: invocation.arguments))
        // A frame over the limit would close the association (for every call on it): refuse
        // this call alone, and say what to change.
        let frameSize = envelope.frameCapacity
        guard frameSize <= settings.maximumFrameSize else {
            throw ClusterCallError.serialization(
                type: "the arguments of \(target.description)",
                reason:
                    "they encode to a frame of \(frameSize) bytes, over ClusterSettings.maximumFrameSize (\(settings.maximumFrameSize)); raise it on every node"
            )
        }
        let deadline = actorSystem.uptime + timeout
        return try await withTaskCancellationHandler {
            // Safety: resumed exactly once: it is registered before anyone can look it up, and only whoever
            // removes it from `pendingCalls` under the lock (reply, sweep, cancellation, loss, shutdown) resumes it.
            try await withUnsafeThrowingContinuation { continuation in
                pendingCalls.withLock {
                    $0.byID[callID] = PendingCall(
                        node: recipient.node, continuation: continuation, deadline: deadline, timeout: timeout,
                        target: target.identifier)
                }
                // A cancellation that came before the call was registered found nothing to fail.
                if Task.isCancelled { return completeCall(callID, with: .failure(CancellationError())) }
                // Nor did a shutdown that began after the check on entry: its failCalls either
                // took the lock after this registration (and fails the call), or set `shutDown`
                // before it (seen here).
                if shutDown { return completeCall(callID, with: .failure(ClusterCallError.systemShutDown)) }
                association.callsSent.wrappingAdd(1, ordering: .relaxed)
                association.send(envelope, frameCapacity: frameSize)
            }
        } onCancel: {
            completeCall(callID, with: .failure(CancellationError()))
        }
    }

    /// Completes a waiting call, once: whichever of the reply, the deadline, a cancellation or
    /// a lost connection comes first wins; the others find nothing. Any thread.
    func completeCall(_ callID: UInt64, with result: Result<WireEnvelope.Reply.Outcome, any Error>) {
        guard let call = pendingCalls.withLock({ $0.byID.removeValue(forKey: callID) }) else { return }
        switch result {
        case .success: metrics.callsSucceeded.increment()
        case .failure: metrics.callsFailed.increment()
        }
        call.continuation.resume(with: result)
    }

    /// Fails every waiting call to a node matching `matches`.
    func failCalls(
        where matches: (ClusterNode) -> Bool, with error: (ClusterNode) -> ClusterCallError
    ) {
        let failed = pendingCalls.withLock { calls -> [PendingCall] in
            let ids = calls.byID.filter { matches($0.value.node) }.keys
            return ids.compactMap { calls.byID.removeValue(forKey: $0) }
        }
        for call in failed {
            metrics.callsFailed.increment()
            call.continuation.resume(throwing: error(call.node))
        }
    }
}

extension ClusterSystem {
    /// How often waiting calls are checked against their deadlines: a tenth of the call
    /// timeout, between 1 ms and 100 ms. A call times out within one interval after its limit
    /// (a shorter ``withCallTimeout(_:isolation:_:)`` limit within up to 100 ms of it).
    var deadlineSweepInterval: Duration {
        min(max(settings.callTimeout / 10, .milliseconds(1)), .milliseconds(100))
    }

    /// Fails the calls past their deadline with ``ClusterCallError/timedOut(target:after:)``,
    /// then schedules the next sweep on the actor system's timer (one timer entry for all
    /// calls, instead of one per call: a call costs no timer allocation or heap operation).
    /// When the actor system shuts down first, the cluster shuts down with it: the waiting
    /// calls fail with ``ClusterCallError/systemShutDown`` at once (nothing would time them out
    /// any more, and no distributed method could run), and so does every later call.
    func sweepDeadlines() {
        actorSystem.schedule(after: deadlineSweepInterval) { [weak self] atShutdown in
            guard let self, !self.shutDown else { return }
            if atShutdown {
                self.logger.info("the actor system is shutting down: the cluster node leaves with it")
                self.failCalls(where: { _ in true }, with: { _ in .systemShutDown })
                Task { await self.shutdown() }
                return
            }
            let now = self.actorSystem.uptime
            let expired = self.pendingCalls.withLock { calls -> [PendingCall] in
                let ids = calls.byID.filter { $0.value.deadline <= now }.keys
                return ids.compactMap { calls.byID.removeValue(forKey: $0) }
            }
            for call in expired {
                self.metrics.callsFailed.increment()
                // The method by its Swift name (the mangled one is what travels).
                let target = RemoteCallTarget(call.target).description
                call.continuation.resume(throwing: ClusterCallError.timedOut(target: target, after: call.timeout))
            }
            self.sweepDeadlines()
        }
    }
}

extension ClusterCallError {
    init(_ failure: WireEnvelope.RemoteFailure, recipient: ClusterActorID) {
        switch failure.code {
        case .unknownActor: self = .unknownActor(recipient)
        case .serialization: self = .serialization(type: failure.typeName, reason: failure.message)
        case .thrown: self = .remote(errorType: failure.typeName, message: failure.message)
        case .invalidInvocation: self = .invalidInvocation(failure.message)
        }
    }
}
