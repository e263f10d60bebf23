/// A store that finds events by tag, across actors, in the order it made them visible: what
/// the read side (projections, views, integrations) follows. ``InMemoryStore``, `SQLiteStore`
/// and `PostgresStore` conform.
///
/// Events carry the tags their actor gives them (``EventSourcedActor/tags(for:)``), stored in
/// the same write as the events. Read them with
/// ``eventsByTag(_:after:follow:pollInterval:pageSize:)``, an `AsyncSequence` that (with
/// `follow`) goes on with new events as they are stored.
public protocol EventsByTagQuery: PersistenceStore {
    /// Up to `limit` events tagged `tag` after `offset`, in offset order. Only events that no
    /// later commit can precede are returned: a reader that resumes after the last one it read
    /// misses nothing (PostgreSQL holds back the events of a transaction while an older one is
    /// still open).
    func events(tagged tag: String, after offset: EventOffset, limit: Int) async throws -> [TaggedEvent]

    /// Signalled when tagged events may have been stored, so that followers wake at once
    /// instead of at their next poll; nil (the default): followers poll.
    var eventNotifier: EventNotifier? { get }
}

extension EventsByTagQuery {
    public var eventNotifier: EventNotifier? { nil }

    /// The events tagged `tag` after `offset`, read a page at a time; with `follow`, the
    /// sequence then waits for new ones (woken by the store's ``eventNotifier``, or every
    /// `pollInterval`, which is also how a reader sees another process's writes to an SQLite
    /// file) and never ends on its own; without, it ends after the last stored one. It ends
    /// when its task is cancelled, and throws what the store throws.
    public func eventsByTag(
        _ tag: String, after offset: EventOffset = .start, follow: Bool = true,
        pollInterval: Duration = .milliseconds(250), pageSize: Int = 256
    ) -> EventsByTag<Self> {
        precondition(pageSize >= 1, "eventsByTag: pageSize must be at least 1")
        precondition(pollInterval > .zero, "eventsByTag: pollInterval must be positive")
        return EventsByTag(
            store: self, tag: tag, offset: offset, follow: follow, pollInterval: pollInterval, pageSize: pageSize)
    }
}

/// The events of one tag, in offset order: see
/// ``EventsByTagQuery/eventsByTag(_:after:follow:pollInterval:pageSize:)``.
public struct EventsByTag<Store: EventsByTagQuery>: AsyncSequence, Sendable {
    public typealias Element = TaggedEvent

    let store: Store
    let tag: String
    let offset: EventOffset
    let follow: Bool
    let pollInterval: Duration
    let pageSize: Int

    public func makeAsyncIterator() -> Iterator {
        Iterator(sequence: self, offset: offset)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let sequence: EventsByTag
        /// The offset of the last event returned.
        var offset: EventOffset
        var page: [TaggedEvent] = []
        var nextInPage = 0
        var finished = false

        public mutating func next() async throws -> TaggedEvent? {
            if nextInPage == page.count {
                if finished { return nil }
                do {
                    guard
                        let next = try await nextTaggedPage(
                            of: sequence.store, tag: sequence.tag, after: offset, limit: sequence.pageSize,
                            follow: sequence.follow, pollInterval: sequence.pollInterval)
                    else {
                        finished = true
                        return nil
                    }
                    page = next
                    nextInPage = 0
                } catch {
                    finished = true
                    throw error
                }
            }
            defer { nextInPage += 1 }
            offset = page[nextInPage].offset
            return page[nextInPage]
        }
    }
}

/// The next page of events tagged `tag` after `offset` (1 to `limit` of them): what both the
/// sequence and the stores' projections read. Without `follow`, nil when there is none yet; with
/// it, waits for one (woken by the store's notifier, or every `pollInterval`). Nil once the task
/// is cancelled, also when that cuts a store's call short.
package func nextTaggedPage<Store: EventsByTagQuery>(
    of store: Store, tag: String, after offset: EventOffset, limit: Int, follow: Bool, pollInterval: Duration
) async throws -> [TaggedEvent]? {
    // Only a follower needs the notifier (PostgreSQL's starts listening at first use).
    let notifier = follow ? store.eventNotifier : nil
    while !Task.isCancelled {
        // Read the count before the query: a commit after the query raises it past this value,
        // so the wait below cannot miss it.
        let seen = notifier?.count ?? 0
        let page: [TaggedEvent]
        do { page = try await store.events(tagged: tag, after: offset, limit: limit) } catch {
            if Task.isCancelled { return nil }
            throw error
        }
        if !page.isEmpty { return page }
        if !follow { return nil }
        if let notifier {
            await notifier.wait(beyond: seen, timeout: pollInterval)
        } else {
            do { try await Task.sleep(for: pollInterval) } catch { return nil }
        }
    }
    return nil
}
