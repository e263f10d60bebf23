/// An actor definition that operators' tools may look into and poke: TroupeObserver's page
/// shows its description and, when it accepts them, offers a field for a test message.
///
/// ```swift
/// extension Cart: InspectableActor {
///     func inspectionDescription() -> String { "\(items.count) items, \(total) in total" }
///     static func testMessage(from text: String) -> Message? {
///         text.hasPrefix("add ") ? .add(String(text.dropFirst(4))) : nil
///     }
/// }
/// ```
///
/// Both run only when a tool asks (``ActorSystem/describeActor(id:timeout:)``,
/// ``ActorSystem/sendTestMessage(toActor:text:)``): nothing is added to the actor's messages.
public protocol InspectableActor: ActorDefinition {
    /// A short account of the actor's state, in its own words. Called on the actor, between two
    /// of its messages (like a handler: it may read the state freely).
    func inspectionDescription() -> String

    /// The message a tool's text makes, or nil to refuse the text. Called on the tool's thread,
    /// not on the actor. Default: nil (the actor takes no test messages).
    static func testMessage(from text: String) -> Message?
}

extension InspectableActor {
    public static func testMessage(from text: String) -> Message? { nil }
}

/// Why ``ActorSystem/describeActor(id:timeout:)`` or ``ActorSystem/sendTestMessage(toActor:text:)``
/// did not do what it was asked.
public enum ActorInspectionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No live actor has this id.
    case noSuchActor(id: UInt64)
    /// The actor's definition is not an ``InspectableActor`` (its type's name).
    case notInspectable(type: String)
    /// The definition's ``InspectableActor/testMessage(from:)`` refused the text.
    case testMessageRefused(type: String)
    /// The actor stopped before it described itself.
    case stopped(id: UInt64)
    /// The actor did not describe itself in time: it is busy (a long or stuck handler) or
    /// suspended by a delayed restart.
    case timedOut(id: UInt64, after: Duration)

    public var description: String {
        switch self {
        case .noSuchActor(let id): "no live actor has id \(id)"
        case .notInspectable(let type):
            "\(type) is not an InspectableActor: conform it to describe itself or take test messages"
        case .testMessageRefused(let type): "\(type).testMessage(from:) refused the text"
        case .stopped(let id): "actor #\(id) stopped before it described itself"
        case .timedOut(let id, let after): "actor #\(id) did not describe itself within \(after) (busy or suspended)"
        }
    }
}
