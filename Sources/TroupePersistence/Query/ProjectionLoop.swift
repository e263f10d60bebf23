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
    let notifier = follow ? store.eventNotifier : nil
    var offset = start
    while !Task.isCancelled {
        let seen = notifier?.count ?? 0
        let batch: [TaggedEvent]
        do { batch = try await store.events(tagged: tag, after: offset, limit: batchSize) } catch {
            if Task.isCancelled { return }
            throw error
        }
        if batch.isEmpty {
            if !follow { return }
            if let notifier {
                await notifier.wait(beyond: seen, timeout: pollInterval)
            } else {
                try? await Task.sleep(for: pollInterval)
            }
            continue
        }
        guard let next = try await applyBatch(batch, offset) else { return }
        offset = next
    }
}
