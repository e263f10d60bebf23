import Synchronization
import Troupe

extension Promise {
    // MARK: Callbacks in the style of the seeds

    /// Calls `success` with the value or `failure` with the error, exactly one of them, once.
    /// Runs on `executor` when given, else on the completing thread (or right now when already
    /// completed). Returns `self` for chaining.
    @discardableResult
    public func then(
        on executor: (any PromiseExecutor)? = nil,
        _ success: @escaping @Sendable (Value) -> Void,
        _ failure: @escaping @Sendable (any Error) -> Void
    ) -> Promise<Value> {
        whenComplete(on: executor) { outcome in
            switch outcome {
            case .success(let value): success(value)
            case .failure(let error): failure(error)
            }
        }
        return self
    }

    /// A promise of `transform(value)`; a failure (of this promise or thrown by `transform`)
    /// passes through. `transform` runs on `executor` when given, else on the completing thread.
    public func map<NewValue: Sendable>(
        on executor: (any PromiseExecutor)? = nil,
        _ transform: @escaping @Sendable (Value) throws -> NewValue
    ) -> Promise<NewValue> {
        let next = Promise<NewValue>()
        whenComplete(on: executor) { outcome in
            switch outcome {
            case .success(let value): next.complete { try transform(value) }
            case .failure(let error): next.fail(error)
            }
        }
        return next
    }

    /// A promise that follows the promise `transform(value)` returns; a failure passes through.
    /// `transform` runs on `executor` when given, else on the completing thread.
    public func flatMap<NewValue: Sendable>(
        on executor: (any PromiseExecutor)? = nil,
        _ transform: @escaping @Sendable (Value) throws -> Promise<NewValue>
    ) -> Promise<NewValue> {
        let next = Promise<NewValue>()
        whenComplete(on: executor) { outcome in
            switch outcome {
            case .success(let value):
                do { try transform(value).whenComplete { next.complete($0) } } catch { next.fail(error) }
            case .failure(let error): next.fail(error)
            }
        }
        return next
    }

    /// A promise that replaces a failure with `transform(error)` (which may throw to fail
    /// again); a value passes through. Runs on `executor` when given, else on the completing thread.
    public func recover(
        on executor: (any PromiseExecutor)? = nil,
        _ transform: @escaping @Sendable (any Error) throws -> Value
    ) -> Promise<Value> {
        let next = Promise<Value>()
        whenComplete(on: executor) { outcome in
            switch outcome {
            case .success(let value): next.succeed(value)
            case .failure(let error): next.complete { try transform(error) }
            }
        }
        return next
    }

    /// A promise that replaces a failure with the promise `transform(error)` returns; a value
    /// passes through. Runs on `executor` when given, else on the completing thread.
    public func recover(
        on executor: (any PromiseExecutor)? = nil,
        with transform: @escaping @Sendable (any Error) throws -> Promise<Value>
    ) -> Promise<Value> {
        let next = Promise<Value>()
        whenComplete(on: executor) { outcome in
            switch outcome {
            case .success(let value): next.succeed(value)
            case .failure(let error):
                do { try transform(error).whenComplete { next.complete($0) } } catch { next.fail(error) }
            }
        }
        return next
    }

    /// Observes a failure (not a value). Runs on `executor` when given, else on the completing
    /// thread. Returns `self`.
    @discardableResult
    public func `catch`(
        on executor: (any PromiseExecutor)? = nil,
        _ body: @escaping @Sendable (any Error) -> Void
    ) -> Promise<Value> {
        whenComplete(on: executor) { if case .failure(let error) = $0 { body(error) } }
        return self
    }

    /// Runs `body` once the promise completes, either way. Runs on `executor` when given, else on
    /// the completing thread. Returns `self`.
    @discardableResult
    public func always(
        on executor: (any PromiseExecutor)? = nil,
        _ body: @escaping @Sendable () -> Void
    ) -> Promise<Value> {
        whenComplete(on: executor) { _ in body() }
        return self
    }

    // MARK: Timeouts and deadlines

    /// A promise with this promise's outcome, or ``PromiseError/timedOut(after:)`` when `duration`
    /// passes first (immediately when `duration` is zero or negative). This promise is not
    /// cancelled. The timeout fires on a Swift concurrency thread (one sleeping task, cancelled as
    /// soon as this promise completes); callbacks of the result run on whichever thread wins.
    public func timeout(after duration: Duration) -> Promise<Value> {
        expire(in: duration, error: PromiseError.timedOut(after: duration))
    }

    /// A promise with this promise's outcome, or ``PromiseError/deadlinePassed`` when `deadline`
    /// comes first (immediately when it has already passed). As ``timeout(after:)`` otherwise.
    public func deadline(_ deadline: ContinuousClock.Instant) -> Promise<Value> {
        expire(in: deadline - .now, error: PromiseError.deadlinePassed)
    }

    private func expire(in duration: Duration, error: PromiseError) -> Promise<Value> {
        if let done = currentOutcome { return .completed(done) }
        let next = Promise<Value>()
        guard duration > .zero else {
            next.fail(error)
            return next
        }
        let timer = Task {
            try await Task.sleep(for: duration)
            next.settle(.failure(error), reportDuplicate: false)
        }
        whenComplete { outcome in
            timer.cancel()
            next.settle(outcome, reportDuplicate: false)
        }
        return next
    }
}

// MARK: Combinators over several promises

/// Slots filled concurrently, each exactly once, by the callback of one input promise.
/// Lock-free contract: each slot is written once, before that writer's releasing decrement of
/// `remaining`; the writer whose decrement reaches zero has acquired every other decrement, so
/// it alone may read all slots.
private final class Slots<Element>: @unchecked Sendable {  // one writer per slot; see above
    private let storage: UnsafeMutableBufferPointer<Element?>
    private let remaining: Atomic<Int>

    init(count: Int) {
        // Safety: `count` slots, all initialised to nil here, deinitialised and freed once by `deinit`.
        storage = .allocate(capacity: count)
        storage.initialize(repeating: nil)
        remaining = Atomic(count)
    }

    /// Stores `element` at `index`; returns every element when this was the last slot filled.
    func fill(_ index: Int, with element: Element) -> [Element]? {
        // Safety: each index is written once, by one input's callback, before its releasing decrement;
        // only the last decrementer reads every slot, after acquiring all the others.
        storage[index] = element
        guard remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return nil }
        return storage.map { $0! }
    }

    deinit {
        // Safety: the last reference is gone, so no callback writes a slot any more.
        storage.deinitialize()
        storage.deallocate()
    }
}

extension Promise {
    /// A promise of every value, in input order, once all succeed; fails with the first failure
    /// (the others are ignored). An empty input succeeds at once with `[]`. The result completes
    /// on the thread that completes the last (or the failing) input.
    public static func all(_ promises: [Promise<Value>]) -> Promise<[Value]> {
        let result = Promise<[Value]>()
        guard !promises.isEmpty else {
            result.succeed([])
            return result
        }
        let slots = Slots<Value>(count: promises.count)
        for (index, promise) in promises.enumerated() {
            promise.whenComplete { outcome in
                switch outcome {
                case .success(let value):
                    if let values = slots.fill(index, with: value) {
                        result.settle(.success(values), reportDuplicate: false)
                    }
                case .failure(let error):
                    result.settle(.failure(error), reportDuplicate: false)
                }
            }
        }
        return result
    }

    /// A promise of the first value to arrive; fails with ``PromiseError/allFailed(_:)`` (errors
    /// in input order) when every input fails, and with ``PromiseError/noInput`` for an empty
    /// input. Completes on the thread of the winning (or last failing) input.
    public static func any(_ promises: [Promise<Value>]) -> Promise<Value> {
        let result = Promise<Value>()
        guard !promises.isEmpty else {
            result.fail(PromiseError.noInput)
            return result
        }
        let errors = Slots<any Error>(count: promises.count)
        for (index, promise) in promises.enumerated() {
            promise.whenComplete { outcome in
                switch outcome {
                case .success(let value):
                    result.settle(.success(value), reportDuplicate: false)
                case .failure(let error):
                    if let all = errors.fill(index, with: error) {
                        result.settle(.failure(PromiseError.allFailed(all)), reportDuplicate: false)
                    }
                }
            }
        }
        return result
    }

    /// A promise of the first outcome to arrive, value or error. Fails with
    /// ``PromiseError/noInput`` for an empty input. Completes on the winner's thread.
    public static func race(_ promises: [Promise<Value>]) -> Promise<Value> {
        let result = Promise<Value>()
        guard !promises.isEmpty else {
            result.fail(PromiseError.noInput)
            return result
        }
        for promise in promises {
            promise.whenComplete { result.settle($0, reportDuplicate: false) }
        }
        return result
    }
}

// MARK: async/await bridges

extension Promise {
    /// Runs `body` as a Swift task (on the global concurrent executor) and completes with its value
    /// or error: a promise from an async function.
    public convenience init(priority: TaskPriority? = nil, _ body: @escaping @Sendable () async throws -> Value) {
        self.init()
        Task(priority: priority) { [self] in
            do { succeed(try await body()) } catch { fail(error) }
        }
    }

    /// Waits (suspending, not blocking) for the outcome. Cancelling the waiting task does not
    /// end the wait: bound it with ``timeout(after:)``.
    public var outcome: Outcome {
        get async {
            if let done = currentOutcome { return done }
            // Safety: never resumed twice: `whenComplete` calls its callback exactly once, at completion (or
            // with `abandoned` from `deinit`).
            return await withUnsafeContinuation { continuation in
                whenComplete { continuation.resume(returning: $0) }
            }
        }
    }

    /// Waits for the value; throws the promise's error. As ``outcome``.
    public var value: Value {
        get async throws { try await outcome.get() }
    }

    /// Waits for the value; throws the promise's error. As ``outcome``.
    public func get() async throws -> Value { try await outcome.get() }
}
