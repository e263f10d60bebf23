/// What ``ActorSystem/shutdown(deadline:)`` achieved by its deadline.
///
/// Complete: every actor handled its mailbox and stopped, and every thread was joined.
/// Otherwise some handler did not return in time (a blocking call, an endless loop): the
/// actors still alive are listed. None of them handles another message: whatever they still
/// hold is dead-lettered (``DeadLetterReason/systemShutdown``) as soon as their current
/// handler returns, and shutdown then finishes by itself, on a thread of its own that keeps
/// the system alive until it has.
public struct ShutdownReport: Sendable, CustomStringConvertible {
    /// An actor that had not stopped by the deadline.
    public struct UnstoppedActor: Sendable, CustomStringConvertible {
        public let address: ActorAddress
        /// Messages still in its mailbox at the deadline, or `nil` when the actor does not count
        /// them (an unbounded mailbox spawned without ``SpawnOptions/tracksMailboxDepth``). The
        /// turn that is stuck may also hold up to a batch of messages already taken from the
        /// mailbox (``ActorSystem/Configuration/batchSize``); those are not counted here, and
        /// are dead-lettered as well.
        public let pendingMessages: Int?
        /// Whether its mailbox was empty at the deadline (always known).
        public let mailboxWasEmpty: Bool

        public var description: String {
            let pending = pendingMessages.map { "\($0) queued" } ?? (mailboxWasEmpty ? "0 queued" : "messages queued")
            return "\(address) (\(pending))"
        }
    }

    /// The actors still alive at the deadline; empty when the shutdown completed.
    public let unstopped: [UnstoppedActor]

    /// Whether every actor stopped and every thread was joined by the deadline.
    public var isComplete: Bool { unstopped.isEmpty }

    public var description: String {
        if isComplete { return "shutdown complete" }
        return
            "shutdown incomplete at the deadline: \(unstopped.count) actor(s) still in a handler or queued behind one: "
            + unstopped.map(\.description).joined(separator: ", ")
    }
}
