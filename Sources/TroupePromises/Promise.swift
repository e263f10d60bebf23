import Synchronization
import Troupe

/// Why a promise failed without anyone failing it explicitly.
public enum PromiseError: Error, Sendable, CustomStringConvertible {
    /// The last reference to a pending promise went away: nobody can complete it any more, so its
    /// callbacks ran with this error instead of never running.
    case abandoned
    /// ``Promise/timeout(after:)`` elapsed first.
    case timedOut(after: Duration)
    /// ``Promise/deadline(_:)`` passed first (or had already passed when it was set).
    case deadlinePassed
    /// ``Promise/any(_:)`` or ``Promise/race(_:)`` was given no promise, so none can win.
    case noInput
    /// Every input of ``Promise/any(_:)`` failed; the errors are in input order.
    case allFailed([any Error])

    public var description: String {
        switch self {
        case .abandoned: "promise abandoned: its last reference was released before it was completed"
        case .timedOut(let after): "promise timed out after \(after)"
        case .deadlinePassed: "promise deadline passed before it was completed"
        case .noInput: "promise combinator given no input promise"
        case .allFailed(let errors): "all \(errors.count) promises failed: \(errors)"
        }
    }
}

/// A value (or error) that arrives later: completed exactly once, observed by any number of
/// callbacks, each of which runs exactly once.
///
/// ```swift
/// let total: Promise<Int> = counter.askPromise { .get($0) }
/// total.map { $0 * 2 }
///      .then({ print("doubled:", $0) }, { print("failed:", $0) })
/// let value = try await total.get()
/// ```
///
/// **Completion** (``succeed(_:)``, ``fail(_:)``, ``complete(_:)``) is lock-free and may happen on
/// any thread. Only the first completion counts; a later one is discarded, returns `false`, and
/// is reported (``PromiseDiagnostics/doubleCompletions`` and ``PromiseEvent/doubleCompletion(valueType:)``),
/// never silently ignored. A promise released while still pending runs its callbacks with
/// ``PromiseError/abandoned``, so no callback is ever lost.
///
/// **Where callbacks run** is stated by each method: without an executor, on the thread that
/// completes the promise (or, when it is already complete, on the registering thread, before the
/// registering call returns); with `on: executor`, wherever the executor runs jobs (for example a
/// Troupe worker: ``WorkerExecutor``); with `on: context` (inside an actor), as a message to that
/// actor, so the callback may touch actor state. Keep inline callbacks short: they run on the
/// completer's thread, which may be an actor's worker or the ask timer.
///
/// Callbacks registered before completion run in registration order. A completion runs the
/// callbacks of dependent promises recursively (a chain of `n` pending `map`s nests `n` frames).
public final class Promise<Value: Sendable>: @unchecked Sendable {  // outcome written once, published via `head`
    /// The outcome of a promise.
    public typealias Outcome = Result<Value, any Error>

    private typealias Callback = @Sendable (Outcome) -> Void

    /// One pending callback. `next` is written by the registering thread before the releasing
    /// compare-exchange that publishes the node; after the completer's acquiring exchange takes
    /// the whole list, the nodes belong to the completer alone.
    private final class Node {
        let callback: Callback
        var next: UInt = 0
        init(_ callback: @escaping Callback) { self.callback = callback }
    }

    /// `head` holds either `completedTag` or a Treiber stack of pending callbacks: 0 when empty,
    /// otherwise the address of a `Node` carrying one +1 retain (owned by the list).
    /// Lock-free contract: nodes are only ever pushed (compare-exchange); the list is taken as a
    /// whole, exactly once, by `exchange(completedTag)` (completion) or by `deinit`. Nodes are
    /// never popped individually, so there is no ABA problem.
    private let head = Atomic<UInt>(0)
    /// Won by exactly one completer; losers report a double completion.
    private let claimed = Atomic<Bool>(false)
    private var storedOutcome: Outcome?

    private static var completedTag: UInt { 1 }

    /// A pending promise; complete it with ``succeed(_:)``, ``fail(_:)`` or ``complete(_:)``.
    public init() {}

    /// An already succeeded promise.
    public init(value: Value) {
        storedOutcome = .success(value)
        claimed.store(true, ordering: .relaxed)
        head.store(Self.completedTag, ordering: .releasing)
    }

    /// An already failed promise.
    public init(error: any Error) {
        storedOutcome = .failure(error)
        claimed.store(true, ordering: .relaxed)
        head.store(Self.completedTag, ordering: .releasing)
    }

    /// An already completed promise.
    public static func completed(_ outcome: Outcome) -> Promise {
        switch outcome {
        case .success(let value): Promise(value: value)
        case .failure(let error): Promise(error: error)
        }
    }

    // MARK: Completion

    /// Completes with `outcome`. Any thread; lock-free. Runs the pending callbacks (those without
    /// an executor on this thread, before returning). Returns `false`, discards `outcome` and
    /// reports a double completion when the promise was already completed.
    @discardableResult
    public func complete(_ outcome: Outcome) -> Bool {
        settle(outcome, reportDuplicate: true)
    }

    /// Succeeds with `value`; see ``complete(_:)``.
    @discardableResult
    public func succeed(_ value: Value) -> Bool { complete(.success(value)) }

    /// Fails with `error`; see ``complete(_:)``.
    @discardableResult
    public func fail(_ error: any Error) -> Bool { complete(.failure(error)) }

    /// Completes with the outcome of `body` (its value, or the error it throws).
    @discardableResult
    public func complete(with body: () throws -> Value) -> Bool {
        do { return succeed(try body()) } catch { return fail(error) }
    }

    /// Whether the promise is completed (its outcome is visible to this thread).
    public var isCompleted: Bool { head.load(ordering: .acquiring) == Self.completedTag }

    /// The outcome if completed, else `nil`. Never blocks.
    public var currentOutcome: Outcome? {
        head.load(ordering: .acquiring) == Self.completedTag ? storedOutcome : nil
    }

    /// The completion used by combinators whose inputs race by design (`race`, `any`, timeouts):
    /// losing is expected there, so it is not reported.
    @discardableResult
    func settle(_ newOutcome: Outcome, reportDuplicate: Bool) -> Bool {
        guard claimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            if reportDuplicate { PromiseDiagnostics.recordDoubleCompletion(Value.self) }
            return false
        }
        storedOutcome = newOutcome
        // Publishes `outcome` (release) and takes every node pushed so far (acquire).
        let list = head.exchange(Self.completedTag, ordering: .acquiringAndReleasing)
        Self.runAll(list, with: newOutcome)
        return true
    }

    /// Runs a taken list in registration order (the stack is newest-first, so reverse it).
    private static func runAll(_ list: UInt, with outcome: Outcome) {
        var reversed: UInt = 0
        var cursor = list
        while cursor != 0 {
            // Safety: each node of the taken list still holds its +1 (from `whenComplete`), and the list
            // belongs to this thread alone.
            let node = Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: cursor)!).takeUnretainedValue()
            let next = node.next
            node.next = reversed
            reversed = cursor
            cursor = next
        }
        cursor = reversed
        while cursor != 0 {
            // Safety: takes each node's +1 back exactly once: the list is taken once (completion or deinit).
            let node = Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: cursor)!).takeRetainedValue()
            cursor = node.next
            node.callback(outcome)
        }
    }

    // MARK: Callbacks

    /// Calls `callback` exactly once with the outcome, on the completing thread, or right now on
    /// this thread when the promise is already completed. The primitive of every other method.
    public func whenComplete(_ callback: @escaping @Sendable (Outcome) -> Void) {
        var current = head.load(ordering: .acquiring)
        if current == Self.completedTag { return callback(storedOutcome!) }
        let node = Node(callback)
        // Safety: the list's +1 for this node, taken back by `runAll` once the node is published, or just
        // below if the promise completes first.
        let raw = UInt(bitPattern: Unmanaged.passRetained(node).toOpaque())
        while true {
            if current == Self.completedTag {
                // Safety: the node was never published (the promise completed first), so its +1 is still ours.
                Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: raw)!).release()
                return callback(storedOutcome!)
            }
            node.next = current
            let (exchanged, original) = head.compareExchange(
                expected: current, desired: raw, ordering: .acquiringAndReleasing)
            if exchanged { return }
            current = original
        }
    }

    /// Calls `callback` exactly once with the outcome, as a job of `executor` (see
    /// ``PromiseExecutor``); with `nil`, as ``whenComplete(_:)``.
    public func whenComplete(on executor: (any PromiseExecutor)?, _ callback: @escaping @Sendable (Outcome) -> Void) {
        guard let executor else { return whenComplete(callback) }
        whenComplete { outcome in executor.execute { callback(outcome) } }
    }

    deinit {
        // Nobody can complete the promise any more: run what is still waiting, once.
        let list = head.load(ordering: .acquiring)
        guard list != Self.completedTag else { return }
        PromiseDiagnostics.recordAbandoned(Value.self)
        if list != 0 { Self.runAll(list, with: .failure(PromiseError.abandoned)) }
    }
}
