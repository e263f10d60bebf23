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
            while !finished {
                if nextInPage < page.count {
                    defer { nextInPage += 1 }
                    offset = page[nextInPage].offset
                    return page[nextInPage]
                }
                if Task.isCancelled { break }
                // Read the notifier's count before the query: a commit after the query bumps it
                // past this value, so the wait below cannot miss it.
                let notifier = sequence.store.eventNotifier
                let seen = notifier?.count ?? 0
                do {
                    page = try await sequence.store.events(
                        tagged: sequence.tag, after: offset, limit: sequence.pageSize)
                } catch {
                    // A store's call cut short by the cancellation ends the sequence quietly.
                    if Task.isCancelled { break }
                    throw error
                }
                nextInPage = 0
                if !page.isEmpty { continue }
                if !sequence.follow { break }
                if let notifier {
                    await notifier.wait(beyond: seen, timeout: sequence.pollInterval)
                } else {
                    do { try await Task.sleep(for: sequence.pollInterval) } catch { break }
                }
            }
            finished = true
            return nil
        }
    }
}
