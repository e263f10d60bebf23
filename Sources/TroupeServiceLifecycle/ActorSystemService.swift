import Logging
import ServiceLifecycle
import Troupe

/// An `ActorSystem` as a swift-service-lifecycle `Service`: `run()` keeps the system
/// running until graceful shutdown, then shuts it down gracefully (every mailbox drained, every
/// `stopped` hook run, the threads joined) and returns.
///
/// ```swift
/// let system = ActorSystem(configuration: .init(name: "orders"))
/// let group = ServiceGroup(configuration: .init(
///     services: [
///         .init(service: ActorSystemService(system)),   // shut down last
///         .init(service: httpServer),                   // shut down first
///     ],
///     gracefulShutdownSignals: [.sigterm],
///     logger: logger))
/// try await group.run()
/// ```
///
/// A `ServiceGroup` shuts its services down in reverse order, each after the one listed after it
/// has returned: listed first, the actor system keeps serving the asks of requests still in
/// flight while the HTTP server stops accepting and finishes them, and only then drains its
/// mailboxes.
///
/// Cancellation (a second signal, a cancelled group) ends `run()` promptly: the system shuts down
/// with a deadline of `cancellationDeadline`; handlers still running then handle nothing more,
/// and what waits behind them is dead-lettered (see `ActorSystem.shutdown(deadline:)`).
public struct ActorSystemService: Service, CustomStringConvertible {
    public let system: ActorSystem
    /// The longest a graceful shutdown may take (`nil`: as long as the slowest handler takes).
    public let shutdownDeadline: Duration?
    /// How long a shutdown caused by cancellation waits for running handlers.
    public let cancellationDeadline: Duration

    public init(
        _ system: ActorSystem, shutdownDeadline: Duration? = nil, cancellationDeadline: Duration = .milliseconds(100)
    ) {
        self.system = system
        self.shutdownDeadline = shutdownDeadline
        self.cancellationDeadline = cancellationDeadline
    }

    public var description: String { "ActorSystemService(\(system.configuration.name))" }

    /// Runs until graceful shutdown or cancellation, then shuts the system down and returns once
    /// it has terminated (or the deadline passed; the shutdown then finishes by itself).
    /// Shutdown reports that list actors still running are logged as warnings.
    public func run() async throws {
        let cancelled: Bool
        do {
            try await gracefulShutdown()
            cancelled = false
        } catch {
            cancelled = true
        }
        let deadline = cancelled ? cancellationDeadline : shutdownDeadline
        let report: ShutdownReport
        if let deadline {
            report = await system.shutdown(deadline: deadline)
        } else {
            await system.shutdown()
            return
        }
        if !report.isComplete {
            system.configuration.logger.warning(
                "actor system shut down with handlers still running",
                metadata: [
                    "system": "\(system.configuration.name)", "cause": cancelled ? "cancellation" : "deadline",
                    "unstopped": "\(report.unstopped.map(\.description))",
                ])
        }
    }
}
