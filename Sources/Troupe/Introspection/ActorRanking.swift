/// The order in which ``ActorSystem/snapshot(topActors:by:matching:)`` picks actors. Among
/// actors with equal counts, the most recently spawned (the last to join the system's live
/// actors) comes first.
public enum ActorRanking: String, Sendable, Hashable, CaseIterable {
    /// Most messages taken from the mailbox first.
    case messagesProcessed
    /// Deepest mailbox first; actors that do not count theirs (``ActorSnapshot/mailboxDepth``
    /// nil) last.
    case mailboxDepth
    /// Most handler failures first.
    case failures
    /// Most restarts first.
    case restarts
    /// By name, then by address, in ascending order (unnamed actors, shown as `actor#ID`, by
    /// that text).
    case name
}
