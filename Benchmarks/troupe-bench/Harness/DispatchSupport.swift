// The Dispatch baseline's "actor": one serial DispatchQueue owning some state.

import Dispatch

/// An actor made of a serial queue and its state. `state` is touched only by blocks running on
/// `queue` (and before the first `tell`, by its creator).
final class QueueActor<State>: @unchecked Sendable {  // `state` is touched only on `queue`
    let queue: DispatchQueue
    var state: State

    init(_ label: String, _ state: State) {
        queue = DispatchQueue(label: label)
        self.state = state
    }

    /// Sends a message: runs `body` on the queue with the state.
    @inline(__always)
    func tell(_ body: @escaping @Sendable (QueueActor<State>) -> Void) {
        queue.async { body(self) }
    }
}
