import Troupe

/// A request that can be asked of an entity on any node: it travels as itself (it is
/// `Codable`), and the node that holds the entity turns it into the entity's own message with
/// a `Reply` whose answer travels back.
///
/// ```swift
/// struct CartTotal: EntityRequest {
///     func message(replyingTo reply: Reply<Int>) -> CartMessage { .total(reply) }
/// }
/// let total = try await carts.entity("user-42").ask(CartTotal())
/// ```
///
/// The node holding the entity finds the request's type by its mangled name, so the type must
/// exist, with the same name, in every node's program (as a distributed method's does).
public protocol EntityRequest<Message>: Codable, Sendable {
    /// The entity's message type.
    associatedtype Message: Sendable
    /// The answer's type.
    associatedtype Response: Codable & Sendable

    /// The message that asks this of the entity, answered through `reply`.
    func message(replyingTo reply: Reply<Response>) -> Message
}
