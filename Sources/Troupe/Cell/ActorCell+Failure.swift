import Logging
import Synchronization
internal import CTroupe

/// Failures, decided restarts and requested restarts. On the actor: called only by the holder
/// of the scheduling right.
extension ActorCell {

    func failed(_ error: any Error, message: Message, token: AskToken?, isRetry: Bool) {
        let extras = extrasCreatingIfNeeded
        extras.failureCount += 1
        failureTotal.add(1, ordering: .relaxed)
        let failure = ActorFailure(actor: address, error: error, failureCount: extras.failureCount, wasRetry: isRetry)
        let decider = config?.failureDecider ?? system.configuration.failureDecider
        var directive = decider(failure)
        if directive.action == .restart && !isRestartable {
            system.logger.error(
                "actor failed and its decider asked for a restart, but it was spawned without a factory (use spawn(options:factory:)); stopping it",
                metadata: failure.logMetadata)
            directive = .stop
        }
        system.hooks.actorFailed(failure, directive)
        system.introspector.record(
            RecentFailure(
                actor: address, error: "\(error)", action: directive.action, at: system.uptime,
                failureCount: extras.failureCount))
        if directive.failingMessage == .retryOnce && !isRetry {
            extras.retry = (message, token)
        } else {
            system.deadLetters.record(.handlerFailed("\(error)"), recipient: address, message: message)
            // An asker learns the handler's error, not just that its Reply was dropped (after
            // the count, so that it can read the count).
            token?.failHandler(error)
        }
        switch directive.action {
        case .resume:
            system.logger.warning("actor failed; resuming it", metadata: failure.logMetadata)
        case .stop:
            system.logger.error("actor failed; stopping it", metadata: failure.logMetadata)
            stopNow(.failed(error))
        case .restart:
            if directive.restartDelay > .zero, let resume = system.suspend(self, for: directive.restartDelay) {
                var metadata = failure.logMetadata
                metadata["delay"] = "\(directive.restartDelay)"
                system.logger.warning("actor failed; restarting it after a delay", metadata: metadata)
                extras.suspension = (error, resume)
                flags.insert(.suspended)
                return
            }
            system.logger.warning("actor failed; restarting it", metadata: failure.logMetadata)
            replaceInstance(reason: error)
            retryFailingMessage()
        }
    }

    /// The restart another thread asked for (``AnyCell/requestRestart(reason:after:)``).
    /// Returns true when it is delayed: the actor is now suspended.
    func restartAsRequested() -> Bool {
        let before = Lifecycle(
            rawValue: lifecycle.bitwiseAnd(~Lifecycle.restartRequested.rawValue, ordering: .acquiringAndReleasing)
                .oldValue)
        guard before.contains(.restartRequested), isRestartable else { return false }
        let request = config?.takeRestartRequest()
        let reason: any Error = request?.reason ?? RestartRequested()
        if let delay = request?.delay, delay > .zero, let resume = system.suspend(self, for: delay) {
            system.logger.info(
                "restart requested; restarting after a delay",
                metadata: ["actor": "\(address)", "reason": "\(reason)", "delay": "\(delay)"])
            extrasCreatingIfNeeded.suspension = (reason, resume)
            flags.insert(.suspended)
            return true
        }
        replaceInstance(reason: reason)
        return false
    }

    /// Replaces the instance with a fresh one from the factory; the mailbox is untouched.
    func replaceInstance(reason: any Error) {
        guard let factory else { return }
        withInstance { $0.willRestart(reason: reason, context: context) }
        cancelTimers()
        let fresh = factory()
        if MemoryLayout<Definition>.size != 0 { withInstance { $0 = fresh } }
        withInstance { $0.didRestart(reason: reason, context: context) }
        restartTotal.add(1, ordering: .relaxed)
        system.hooks.actorRestarted(address, reason)
        if flags.contains(.stopRequested) { stopNow(.stopped) }
    }

    func retryFailingMessage() {
        guard let retry = extras?.retry else { return }
        extras?.retry = nil
        if isStopped {
            system.deadLetters.record(.recipientStopped, recipient: address, message: retry.message as! Message)
            retry.token?.failDelivery(.recipientStopped)
            return
        }
        deliver(retry.message as! Message, token: retry.token, isRetry: true)
    }

}
