import Troupe
import TroupeCluster

/// This node's asks waiting for an answer through the lines, by ask number. Each is completed
/// once, by whoever takes it out: the answer, its time limit, a cancellation or a lost batch.
struct PendingAsks {
    enum Entry {
        /// A direct ask's call is in flight; an answer that comes through the lines meanwhile
        /// (the request was forwarded) waits here for the caller.
        case expecting
        case answered(Result<[UInt8], AskError>)
        case waiting(UnsafeContinuation<Result<[UInt8], AskError>, Never>, timer: ScheduledAction?)
    }
    var entries: [UInt64: Entry] = [:]

    var waitingCount: Int { entries.count }
}

extension ClusterEntityRegion {
    /// Completes the waiting ask `answer` is for; an ask already completed (timed out,
    /// cancelled) finds nothing.
    func complete(_ answer: EntityAnswer) {
        complete(answer.askID, with: answer.result)
    }

    func complete(_ askID: UInt64, with result: Result<[UInt8], AskError>) {
        typealias Waiter = (UnsafeContinuation<Result<[UInt8], AskError>, Never>, ScheduledAction?)
        let waiting = asks.withLock { asks -> Waiter? in
            switch asks.entries[askID] {
            case .expecting:
                asks.entries[askID] = .answered(result)
                return nil
            case .waiting(let continuation, let timer):
                asks.entries[askID] = nil
                return (continuation, timer)
            case .answered, nil:
                return nil
            }
        }
        guard let (continuation, timer) = waiting else { return }
        _ = timer?.cancel()
        continuation.resume(returning: result)
    }

    /// Sends a request to the entity's owner and waits for its answer, at most `timeout`.
    ///
    /// When the owner is another node and the line to it is idle (so every message sent to it
    /// before is already in a mailbox there, see ``Outbox/beginDirect()``), the request goes
    /// as one call and its answer comes in the call's reply: one round trip. Otherwise it goes
    /// through the line, behind what is queued, and its answer comes back through the other
    /// node's line.
    nonisolated(nonsending) func askAnywhere(
        key: String, requestName: String, payload: [UInt8], timeout: Duration
    ) async -> Result<[UInt8], AskError> {
        let askID = nextAskID.wrappingAdd(1, ordering: .relaxed).newValue
        let envelope = EntityEnvelope(
            key: key, payload: payload, request: requestName, askID: askID, origin: cluster.node)
        let clock = ContinuousClock()
        let started = clock.now
        let view = placement.withLock { $0.view }
        if let owner = view.owner(of: key), let outbox = owner.outbox, outbox.beginDirect(routedBy: view.number) {
            asks.withLock { $0.entries[askID] = .expecting }
            counters.sent.add(1, ordering: .relaxed)
            let answer: EntityAnswer
            do {
                defer { outbox.endDirect() }
                let bytes = try await ClusterSystem.withCallTimeout(timeout) {
                    try await outbox.host.ask(EntityWire.encode(envelope))
                }
                answer = try EntityWire.decodeAnswer(bytes)
            } catch {
                asks.withLock { _ = $0.entries.removeValue(forKey: askID) }
                return .failure(askError(error, node: owner.node, timeout: timeout))
            }
            guard answer.code == .forwarded else {
                asks.withLock { _ = $0.entries.removeValue(forKey: askID) }
                return answer.result
            }
            let left = timeout - (clock.now - started)
            return await awaitAnswer(askID, timeout: left > .zero ? left : .milliseconds(1), limit: timeout) {}
        }
        return await awaitAnswer(askID, timeout: timeout, limit: timeout) { route(envelope) }
    }

    /// Waits for the answer to `askID` through the lines, at most `timeout`; `send` sends the
    /// request once the wait is registered (nothing, when it is already on its way).
    nonisolated(nonsending) private func awaitAnswer(
        _ askID: UInt64, timeout: Duration, limit: Duration, send: () -> Void
    ) async -> Result<[UInt8], AskError> {
        await withTaskCancellationHandler {
            // Safety: resumed exactly once: registered before anything can complete it, and only whoever
            // takes it out of `asks` under the lock (answer, timer, cancellation) resumes it.
            await withUnsafeContinuation { continuation in
                let early = asks.withLock { asks -> Result<[UInt8], AskError>? in
                    if case .answered(let result) = asks.entries[askID] {
                        asks.entries[askID] = nil
                        return result
                    }
                    asks.entries[askID] = .waiting(continuation, timer: nil)
                    return nil
                }
                if let early { return continuation.resume(returning: early) }
                // At the actor system's shutdown its timer runs every action at once: the ask
                // fails as undeliverable then, not as timed out.
                let timer = cluster.actorSystem.schedule(after: timeout) { [weak self] atShutdown in
                    self?.complete(
                        askID, with: .failure(atShutdown ? .undeliverable(.systemShutdown) : .timedOut(after: limit)))
                }
                let registered = asks.withLock { asks -> Bool in
                    guard case .waiting(let continuation, nil) = asks.entries[askID] else { return false }
                    asks.entries[askID] = .waiting(continuation, timer: timer)
                    return true
                }
                if !registered { _ = timer.cancel() }
                if Task.isCancelled { return complete(askID, with: .failure(.cancelled)) }
                send()
            }
        } onCancel: {
            complete(askID, with: .failure(.cancelled))
        }
    }

    /// A direct ask's call that failed, as the asker sees it.
    private func askError(_ error: any Error, node: ClusterNode, timeout: Duration) -> AskError {
        if error is CancellationError { return .cancelled }
        if let callError = error as? ClusterCallError {
            switch callError {
            case .timedOut: return .timedOut(after: timeout)
            case .systemShutDown: return .undeliverable(.systemShutdown)
            default: break
            }
        }
        counters.lost.add(1, ordering: .relaxed)
        return .failed(ClusterEntityError.lostInTransit(node: "\(node)", reason: "\(error)"))
    }
}

extension EntityAnswer {
    /// The outcome as the asker sees it.
    var result: Result<[UInt8], AskError> {
        let text = String(decoding: payload, as: UTF8.self)
        switch code {
        case .value: return .success(payload)
        case .recipientStopped: return .failure(.recipientStopped)
        case .noReply: return .failure(.noReply)
        case .systemShutdown: return .failure(.undeliverable(.systemShutdown))
        case .undeliverable, .failed, .timedOut, .forwarded: return .failure(.failed(ClusterEntityError.remote(text)))
        case .unknownRequestType: return .failure(.failed(ClusterEntityError.unknownRequestType(text)))
        case .serialization:
            return .failure(.failed(ClusterEntityError.serialization(type: "the request", reason: text)))
        }
    }
}
