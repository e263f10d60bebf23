import Troupe

/// The entity of the kind "demo" (`--entities`): it only exists, so that the observer's page
/// has entities per node to show.
struct DemoEntity: ActorDefinition {
    enum Message: Codable, Sendable { case touch }
    func receive(_ message: Message, context: ActorContext<Message>) {}
}
