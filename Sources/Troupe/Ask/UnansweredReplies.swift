internal import CTroupe

/// Runs `body`; each ``Reply`` that this thread releases unanswered while `body` runs fails its
/// ask with `error` (as ``AskError/failed(_:)``, or as `error` itself when it is an
/// ``AskError``) instead of ``AskError/noReply``.
///
/// For code that gives up requests it holds, for a reason the askers should learn: a durable
/// actor whose recovery failed drops the commands it had stashed, and their askers get the
/// recovery's error rather than "the handler dropped its Reply".
///
/// ```swift
/// withUnansweredRepliesFailing(with: StoreUnavailable()) {
///     pendingRequests.removeAll()   // each unanswered Reply in them fails with StoreUnavailable
/// }
/// ```
///
/// Only releases on the calling thread, during `body`, are affected: a `Reply` still referenced
/// elsewhere, or answered already, is not. Calls nest; the innermost error applies.
public func withUnansweredRepliesFailing<T>(with error: any Error, _ body: () throws -> T) rethrows -> T {
    let reason = UnansweredReplyError(error)
    let previous = CTroupe_unanswered_reply_error()
    // Safety: the pointer is unretained; `withExtendedLifetime` keeps `reason` alive until the
    // thread-local is restored below, and only this thread reads it.
    CTroupe_set_unanswered_reply_error(Unmanaged.passUnretained(reason).toOpaque())
    defer { CTroupe_set_unanswered_reply_error(previous) }
    return try withExtendedLifetime(reason) { try body() }
}

/// The error set by ``withUnansweredRepliesFailing(with:_:)`` on this thread.
final class UnansweredReplyError {
    let error: any Error

    init(_ error: any Error) { self.error = error }

    /// The error for a `Reply` released unanswered on this thread now, if any.
    static var current: (any Error)? {
        guard let raw = CTroupe_unanswered_reply_error() else { return nil }
        // Safety: set by `withUnansweredRepliesFailing` on this thread, which keeps it alive
        // while it is set.
        return Unmanaged<UnansweredReplyError>.fromOpaque(raw).takeUnretainedValue().error
    }
}
