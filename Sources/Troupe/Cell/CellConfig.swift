import Synchronization

/// Rarely used, immutable cell settings; `nil` for an actor spawned with default options, so
/// that the common cell stays small.
@usableFromInline
final class CellConfig: Sendable {
    let name: String?
    let capacity: Int  // 0: unbounded
    let overflow: MailboxOverflowPolicy
    let dedicated: Worker?
    let failureDecider: FailureDecider?
    let tracksDepth: Bool
    /// The spawn factory (`@Sendable () -> Definition`), type-erased so the config stays
    /// non-generic; only read on restart.
    let factory: (any Sendable)?
    /// Set for ``SpawnOptions/selfInvalidating`` actors.
    let selfInvalidation: SelfInvalidation?
    /// A restart requested from another thread and not yet acted on: the address of a
    /// retained `RestartRequest` (0: none), exchanged in by requesters (the last one wins) and
    /// out by the actor.
    private let pendingRestart = Atomic<UInt>(0)

    init(options: SpawnOptions, dedicated: Worker?, factory: (any Sendable)?) {
        name = options.name
        switch options.mailbox {
        case .unbounded:
            capacity = 0
            overflow = .fail
        case .bounded(let bound, let policy):
            if bound < 1 {
                fatalError(
                    "SpawnOptions.mailbox: .bounded(capacity: \(bound), …) needs a capacity of at least 1; use .unbounded for no limit"
                )
            }
            capacity = bound
            overflow = policy
        }
        self.dedicated = dedicated
        failureDecider = options.failureDecider
        tracksDepth = options.tracksMailboxDepth || capacity > 0
        self.factory = factory
        selfInvalidation = options.selfInvalidating ? SelfInvalidation() : nil
    }

    deinit { _ = takeRestartRequest() }

    /// Any thread.
    func requestRestart(_ request: RestartRequest) {
        // Safety: the stored address owns one retain; the exchange hands the replaced one's to this
        // caller alone, which gives it back.
        let address = UInt(bitPattern: Unmanaged.passRetained(request).toOpaque())
        let replaced = pendingRestart.exchange(address, ordering: .acquiringAndReleasing)
        if let raw = UnsafeMutableRawPointer(bitPattern: replaced) {
            Unmanaged<RestartRequest>.fromOpaque(raw).release()
        }
    }

    /// The actor, acting on a request (or the config going away).
    func takeRestartRequest() -> RestartRequest? {
        let address = pendingRestart.exchange(0, ordering: .acquiringAndReleasing)
        guard let raw = UnsafeMutableRawPointer(bitPattern: address) else { return nil }
        // Safety: the exchange took the stored address, and with it its one retain, for this caller alone.
        return Unmanaged<RestartRequest>.fromOpaque(raw).takeRetainedValue()
    }

    static func needed(for options: SpawnOptions, hasFactory: Bool) -> Bool {
        hasFactory || !options.needsNoCellConfig
    }
}

/// A restart asked for with ``ActorRef/requestRestart(reason:after:)``.
final class RestartRequest: @unchecked Sendable {  // immutable; read by the taker only
    let reason: any Error
    let delay: Duration
    init(reason: any Error, delay: Duration) {
        self.reason = reason
        self.delay = delay
    }
}
