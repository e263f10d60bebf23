/// The one type that handles an ask state's raw retain: the token an envelope carries for the
/// ask it belongs to.
///
/// Ownership: a token stands for one retain of its ``AskStateBase``, taken by the sender
/// (``retaining(_:)``) and given back exactly once by whoever ends the envelope's life: the
/// handler's turn (``release()``), a failed handler (``failHandler(_:)``), or a dead letter
/// (``failDelivery(_:)``). The retain keeps the state alive even when the request does not
/// hold its `Reply` and the ask ends (timeout) first.
@usableFromInline
struct AskToken {
    @usableFromInline let raw: UnsafeMutableRawPointer

    @usableFromInline init(raw: UnsafeMutableRawPointer) { self.raw = raw }

    /// Takes the retain the envelope will own. Any thread (the sender).
    @usableFromInline
    static func retaining(_ state: AskStateBase) -> AskToken {
        // Safety: the token owns this retain until `failDelivery`, `failHandler` or the
        // answer's path takes it back (exactly one of them, by whoever holds the envelope).
        AskToken(raw: Unmanaged.passRetained(state).toOpaque())
    }

    // Safety: `raw` was made by `retaining(_:)` (and carried in the envelope's header), whose retain
    // keeps the state alive until exactly one of the three calls below gives it back.
    private var state: Unmanaged<AskStateBase> { Unmanaged<AskStateBase>.fromOpaque(raw) }

    // Safety: gives the request's retain back, once (the ownership contract above).
    /// The request was handled: gives the retain back.
    @usableFromInline func release() { state.release() }

    // Safety: takes the token's retain back, once (the ownership contract above); the value it
    // returns keeps the state alive through the call.
    /// The request became a dead letter: fails the ask (if still open) and gives the retain back.
    func failDelivery(_ reason: DeadLetterReason) { state.takeRetainedValue().failDelivery(reason) }

    // Safety: takes the token's retain back, once (the ownership contract above); the value it
    // returns keeps the state alive through the call.
    /// The request's handler failed: fails the ask with the error (if still open) and gives the
    /// retain back.
    func failHandler(_ error: any Error) { state.takeRetainedValue().failHandler(error) }
}
