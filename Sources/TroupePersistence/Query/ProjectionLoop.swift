/// The loop behind the stores' `runProjection`: reads the events tagged `tag` after the offset a
/// batch at a time and hands each batch to `applyBatch`, which commits it with the projection's
/// offset and returns the offset to go on from (nil: stop). With `follow` it then waits for new
/// events (the store's ``EventsByTagQuery/eventNotifier``, or every `pollInterval`); it returns
/// when caught up (without `follow`) or when its task is cancelled.
package func runProjectionLoop<Store: EventsByTagQuery>(
    on store: Store, tag: String, from start: EventOffset, batchSize: Int, follow: Bool, pollInterval: Duration,
    applyBatch: (_ batch: [TaggedEvent], _ offset: EventOffset) async throws -> EventOffset?
) async throws {
    precondition(batchSize >= 1, "runProjection: batchSize must be at least 1")
    precondition(pollInterval > .zero, "runProjection: pollInterval must be positive")
    var offset = start
    while let batch = try await nextTaggedPage(
        of: store, tag: tag, after: offset, limit: batchSize, follow: follow, pollInterval: pollInterval)
    {
        guard let next = try await applyBatch(batch, offset) else { return }
        offset = next
    }
}
