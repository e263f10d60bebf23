/// Why a durable actor could not recover, write or read. A write's error fails the command's
/// reply (the asker learns it) and then the actor (its supervision decides: restart recovers
/// from what is stored; nothing acknowledged is lost).
public enum PersistenceError: Error, Sendable, CustomStringConvertible {
    /// A newer incarnation of `id` claimed it (a restart race, or the same identity spawned on
    /// another node): this one may not write any more.
    case fenced(PersistenceID, epoch: WriterEpoch, current: WriterEpoch)
    /// The store's history of `id` does not end where this actor thought (it attempted
    /// `attempted`, the store expected `expected`): another writer got in, or the store lost
    /// data.
    case sequenceConflict(PersistenceID, attempted: Int64, expected: Int64)
    /// The durable state of `id` is at revision `current`, not the `expected` one this actor
    /// read: another writer saved it meanwhile.
    case revisionConflict(PersistenceID, expected: Int64, current: Int64)
    /// The store failed the whole batch (disk full, connection lost, no answer within
    /// `Journal.Settings.storeTimeout`, …): it was not acknowledged. A batch refused by the
    /// store (disk full) is not stored; one lost in flight (connection cut, timed out) may be,
    /// and a recovery then sees it.
    case storeFailed(PersistenceID, underlying: any Error)
    /// Reading the history failed.
    case recoveryFailed(PersistenceID, underlying: any Error)
    /// A stored event or snapshot could not be decoded.
    case decodingFailed(PersistenceID, sequenceNumber: Int64, underlying: any Error)
    /// A stored type version this build cannot read.
    case unreadableVersion(typeName: String, version: Int, reason: String)
    /// An event's tag (``EventSourcedActor/tags(for:)``) is not a valid tag: the write was not
    /// attempted.
    case invalidTag(PersistenceID, tag: String, reason: String)
    /// More commands arrived during a write or recovery than the actor's stash holds.
    case stashOverflow(PersistenceID, capacity: Int)
    /// The journal was shut down.
    case journalClosed

    public var description: String {
        switch self {
        case .fenced(let id, let epoch, let current):
            "\(id): fenced — this incarnation writes with \(epoch), the store has \(current) (another incarnation took over)"
        case .sequenceConflict(let id, let attempted, let expected):
            "\(id): sequence conflict — wrote from event \(attempted), the store expected \(expected)"
        case .revisionConflict(let id, let expected, let current):
            "\(id): revision conflict — this actor read revision \(expected), the store has \(current)"
        case .storeFailed(let id, let underlying): "\(id): the store failed the write: \(underlying)"
        case .recoveryFailed(let id, let underlying): "\(id): recovery failed: \(underlying)"
        case .decodingFailed(let id, let sequenceNumber, let underlying):
            "\(id): event \(sequenceNumber) cannot be decoded: \(underlying)"
        case .unreadableVersion(let typeName, let version, let reason): "\(typeName) version \(version): \(reason)"
        case .invalidTag(let id, let tag, let reason): "\(id): invalid tag \(String(reflecting: tag)): \(reason)"
        case .stashOverflow(let id, let capacity):
            "\(id): more than \(capacity) commands arrived while a write or recovery was in flight"
        case .journalClosed: "the journal is shut down"
        }
    }
}
