internal import CTroupe

/// Owner of one C event count (see CTroupe.h): the parking primitive for workers, the timer
/// thread, blocking asks and shutdown.
final class EventCount: @unchecked Sendable {  // the C event count is thread-safe by design (futex + atomics)
    let raw: OpaquePointer = CTroupe_eventcount_create()!

    deinit { CTroupe_eventcount_destroy(raw) }

    @inline(__always) func prepareWait() -> UInt32 { CTroupe_eventcount_prepare_wait(raw) }
    @inline(__always) func cancelWait() { CTroupe_eventcount_cancel_wait(raw) }
    /// Negative timeout: wait until notified.
    func wait(epoch: UInt32, timeoutNanoseconds: Int64 = -1) { CTroupe_eventcount_wait(raw, epoch, timeoutNanoseconds) }
    @inline(__always) func notify(all: Bool = false) { CTroupe_eventcount_notify(raw, all) }
}
