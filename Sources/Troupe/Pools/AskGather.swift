internal import TroupeLocks
import Synchronization
internal import CTroupe

/// Collects the answers of ``ActorPool/askAll(timeout:_:)``: `complete` from any thread (the
/// repliers'), once per index; whoever completes the last one (or `start`, if all came first)
/// resumes the continuation, outside the mutex.
final class AskGather<Value: Sendable>: Sendable {
    private struct State {
        var results: [Result<Value, AskError>?]
        var remaining: Int
        var continuation: UnsafeContinuation<[Result<Value, AskError>], Never>?
    }

    private let state: Locked<State>

    init(count: Int) {
        state = Locked(State(results: Array(repeating: nil, count: count), remaining: count, continuation: nil))
    }

    func start(_ continuation: UnsafeContinuation<[Result<Value, AskError>], Never>) {
        let done: [Result<Value, AskError>]? = state.withLock { state in
            if state.remaining == 0 { return state.results.map { $0! } }
            state.continuation = continuation
            return nil
        }
        // Safety: every result was in, so the continuation was never stored: resumed once, here.
        if let done { continuation.resume(returning: done) }
    }

    func complete(_ index: Int, _ result: Result<Value, AskError>) {
        let finished: (UnsafeContinuation<[Result<Value, AskError>], Never>, [Result<Value, AskError>])? =
            state.withLock { state in
                guard state.results[index] == nil else { return nil }
                state.results[index] = result
                state.remaining -= 1
                guard state.remaining == 0, let continuation = state.continuation else { return nil }
                state.continuation = nil
                return (continuation, state.results.map { $0! })
            }
        // Safety: the last `complete` took the continuation out under the lock: resumed once, here.
        if let (continuation, results) = finished { continuation.resume(returning: results) }
    }
}

// MARK: Spawning
