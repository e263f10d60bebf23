/// A cache → source → save flow over promises: the stored value when there is one, otherwise a
/// fresh one from the source, saved.
///
/// - ``fetch(_:)`` runs ``loadFromPersistence`` first; only if it fails, ``fetchFromSource(_:)``.
/// - ``fetchFromSource(_:)`` runs ``source``; only if it succeeds, ``saveToPersistence`` with its
///   value. The result is the saved value (a failed save fails the fetch).
///
/// Each step is a replaceable `var`, typically an `askPromise` to a store or a source actor; wrap
/// one to extend it (``observeLoadFailure(_:)``), or observe every step with ``observe(_:)``.
/// Steps run wherever the previous promise completed (their promises' completing threads).
///
/// ```swift
/// var flow = FetchFlow<String, Profile>(
///     loadFromPersistence: { key in store.askPromise { .load(key, $0) } },
///     source: { key in api.askPromise { .download(key, $0) } },
///     saveToPersistence: { key, profile in store.askPromise { .save(key, profile, $0) } })
/// flow.observeLoadFailure { key, error in logger.info("cache miss for \(key): \(error)") }
/// let profile = try await flow.fetch("ada").get()
/// ```
public struct FetchFlow<Key: Sendable, Value: Sendable>: Sendable {
    /// Loads a stored value; fails when there is none (or it is invalid).
    public var loadFromPersistence: @Sendable (Key) -> Promise<Value>
    /// Produces a fresh value (typically from the network).
    public var source: @Sendable (Key) -> Promise<Value>
    /// Stores a fresh value; its promise's value is the flow's result.
    public var saveToPersistence: @Sendable (Key, Value) -> Promise<Value>

    public init(
        loadFromPersistence: @escaping @Sendable (Key) -> Promise<Value>,
        source: @escaping @Sendable (Key) -> Promise<Value>,
        saveToPersistence: @escaping @Sendable (Key, Value) -> Promise<Value>
    ) {
        self.loadFromPersistence = loadFromPersistence
        self.source = source
        self.saveToPersistence = saveToPersistence
    }

    /// A flow without persistence: loading always fails, saving passes the value through.
    public init(source: @escaping @Sendable (Key) -> Promise<Value>) {
        self.init(
            loadFromPersistence: { _ in Promise(error: FetchFlowError.noPersistence) },
            source: source,
            saveToPersistence: { _, value in Promise(value: value) })
    }

    /// The stored value, or (if loading fails) a fresh one from the source, saved.
    public func fetch(_ key: Key) -> Promise<Value> {
        let flow = self
        return loadFromPersistence(key).recover(with: { _ in flow.fetchFromSource(key) })
    }

    /// A fresh value from the source, saved; a failed source skips the save.
    public func fetchFromSource(_ key: Key) -> Promise<Value> {
        let save = saveToPersistence
        return source(key).flatMap { value in save(key, value) }
    }

    /// Wraps ``loadFromPersistence`` so that `observer` sees why it failed (the error the flow
    /// otherwise swallows by falling back to the source). Runs on the failing step's thread.
    public mutating func observeLoadFailure(_ observer: @escaping @Sendable (Key, any Error) -> Void) {
        let load = loadFromPersistence
        loadFromPersistence = { key in load(key).catch { observer(key, $0) } }
    }

    /// Wraps all three steps so that `observer` sees each start and outcome. Observers run on the
    /// thread that starts or completes the step.
    public mutating func observe(_ observer: @escaping @Sendable (FetchEvent<Key, Value>) -> Void) {
        let (load, source, save) = (loadFromPersistence, self.source, saveToPersistence)
        @Sendable func watched(_ step: FetchStep, _ key: Key, _ run: () -> Promise<Value>) -> Promise<Value> {
            observer(.started(step, key: key))
            // A promise of its own, completed after the observer ran: the next step waits on it,
            // so it cannot start before the observer has seen this one end (with `then`, which
            // returns the same promise, the two callbacks raced when the step completed on
            // another thread while the flow was still chaining).
            let observed = Promise<Value>()
            run().whenComplete { outcome in
                switch outcome {
                case .success(let value): observer(.succeeded(step, key: key, value: value))
                case .failure(let error): observer(.failed(step, key: key, error: error))
                }
                observed.complete(outcome)
            }
            return observed
        }
        loadFromPersistence = { key in watched(.loadFromPersistence, key) { load(key) } }
        self.source = { key in watched(.source, key) { source(key) } }
        saveToPersistence = { key, value in watched(.saveToPersistence, key) { save(key, value) } }
    }
}
