import Troupe

/// What the supervisor needs from an `ActorRef` of any message type.
protocol SupervisedRef: Sendable {
    var address: ActorAddress { get }
    var isStopped: Bool { get }
    func requestRestart(reason: any Error, after delay: Duration) -> Bool
    func stop()
    func whenTerminated(_ callback: @escaping @Sendable (Terminated) -> Void)
    /// Sends `message` when the actor accepts its type (per-type handler actors accept any
    /// value); nil when it does not.
    func tellIfAccepted<Value: Sendable>(_ message: Value) -> TellOutcome?
    /// The message type's name, for errors.
    var messageTypeName: String { get }
}

extension ActorRef: SupervisedRef {
    func tellIfAccepted<Value: Sendable>(_ message: Value) -> TellOutcome? {
        if let typed = message as? Message { return tell(typed) }
        if let handlers = self as? ActorRef<AnyMessage> { return handlers.tell(message) }
        return nil
    }

    var messageTypeName: String { "\(Message.self)" }
}
