import Logging
import Synchronization

/// Counts every dead letter of a system, tells observers about each one, and logs each one at
/// `debug` level with structured metadata (`recipient`, `reason`, `detail`, `message_type`).
///
/// Thread-safety: counters are atomics; observers are called synchronously on the thread that
/// dead-letters the message (a worker, or a sender), so they must be quick and must not block.
public final class DeadLetterOffice: Sendable {
    private let stopped = Atomic<Int>(0)
    private let unhandled = Atomic<Int>(0)
    private let overflow = Atomic<Int>(0)
    private let shutdown = Atomic<Int>(0)
    private let failed = Atomic<Int>(0)
    private let observers = ObserverList<@Sendable (DeadLetter) -> Void>()
    private let logger: Logger
    /// Whether `logger` emits `debug` records (read once: a logger's level is fixed when the
    /// system is configured).
    private let logsEachLetter: Bool

    init(logger: Logger) {
        self.logger = logger
        logsEachLetter = logger.logLevel <= .debug
    }

    /// Dead letters so far, all reasons.
    public var total: Int { DeadLetterReason.Kind.allCases.reduce(0) { $0 + count($1) } }

    /// Dead letters so far for one kind of reason.
    public func count(_ kind: DeadLetterReason.Kind) -> Int {
        switch kind {
        case .recipientStopped: stopped.load(ordering: .relaxed)
        case .unhandledMessageType: unhandled.load(ordering: .relaxed)
        case .mailboxFull: overflow.load(ordering: .relaxed)
        case .systemShutdown: shutdown.load(ordering: .relaxed)
        case .handlerFailed: failed.load(ordering: .relaxed)
        }
    }

    private func increment(_ kind: DeadLetterReason.Kind) {
        switch kind {
        case .recipientStopped: stopped.add(1, ordering: .relaxed)
        case .unhandledMessageType: unhandled.add(1, ordering: .relaxed)
        case .mailboxFull: overflow.add(1, ordering: .relaxed)
        case .systemShutdown: shutdown.add(1, ordering: .relaxed)
        case .handlerFailed: failed.add(1, ordering: .relaxed)
        }
    }

    /// Calls `observer` for every later dead letter, on the thread that dead-letters it.
    /// The returned ``Observation`` removes it; observers are also dropped when the system has
    /// shut down.
    @discardableResult
    public func observe(_ observer: @escaping @Sendable (DeadLetter) -> Void) -> Observation {
        observers.add(observer)
    }

    /// Records a dead letter. `message` is only materialised (boxed) when someone observes.
    func record(
        _ reason: DeadLetterReason, recipient: @autoclosure () -> ActorAddress, message: @autoclosure () -> any Sendable
    ) {
        increment(reason.kind)
        guard !observers.isEmpty || logsEachLetter else { return }
        let letter = DeadLetter(message: message(), recipient: recipient(), reason: reason)
        if logsEachLetter { logger.debug("dead letter", metadata: letter.logMetadata) }
        observers.forEach { $0(letter) }
    }

    /// The system has shut down: drop the observers (which may capture the system).
    func removeAllObservers() { observers.close() }
}
