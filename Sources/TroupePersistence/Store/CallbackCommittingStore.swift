/// A ``PersistenceStore`` that commits on a thread of its own and can report there, so that a
/// ``Journal`` hands it batches without starting a task for them.
///
/// Through ``PersistenceStore/commit(_:)`` a batch costs two thread hops besides the store's
/// own: a task to run the commit, and the task resuming after it. A journal whose store
/// conforms (and that was made without an `executor`) calls ``commit(_:completion:)`` from the
/// thread that submitted the first write, and the store's thread, in the completion, answers
/// the batch's writers and starts the next batch. `SQLiteStore` conforms: its writer thread
/// runs every batch.
public protocol CallbackCommittingStore: PersistenceStore {
    /// Commits `operations` as ``PersistenceStore/commit(_:)`` does and calls `completion` once
    /// with its outcomes or error, on the store's thread. Keep `completion` short: the journal's
    /// answers the writers (it tells actors) and hands the store the next batch.
    ///
    /// The store may call `completion` before returning (with an empty batch, or when it is
    /// closed); the journal allows for it.
    func commit(
        _ operations: [JournalOperation],
        completion: @escaping @Sendable (Result<[JournalOutcome], any Error>) -> Void)
}
