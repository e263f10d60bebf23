import Synchronization
import Tracing
import Troupe

/// Makes a request's `ServiceContext` (its trace) follow it from actor to actor: the context
/// current when a message is sent is current again while its handler runs, optionally inside a
/// span per handled message.
///
/// ```swift
/// let system = ActorSystem(configuration: .init(
///     name: "shop", contextPropagation: ServiceContextPropagation()))
///
/// // In an HTTP handler (the request's span is current):
/// let total = try await cart.ask { .total($0) }   // the cart's handler runs in a child span
/// ```
///
/// Opt-in per system: without it, messages carry nothing and sends keep their fastest path (no
/// allocation per message, as the benchmark's allocation guard checks). With it, every send
/// takes the slower path that reads `ServiceContext.current`; a send without a current context
/// carries nothing and allocates nothing, and one with a context allocates one small object.
public struct ServiceContextPropagation: MessageContextPropagation {
    /// Whether handled messages get spans.
    public enum Spans: Sendable {
        /// The context is restored as is; no span is made.
        case none
        /// A span per handled message that carried a context, a child of the sender's current
        /// span: named `"<actor> handles <message type>"`, of kind `consumer` (`server` for an
        /// ask), with the attributes `troupe.actor` and `troupe.message_type`.
        case perMessage
    }

    public let spans: Spans
    private let tracer: (any Tracer)?
    private let names = TypeNames()

    /// `tracer`: where spans go; by default the one `InstrumentationSystem.bootstrap` installed.
    public init(spans: Spans = .perMessage, tracer: (any Tracer)? = nil) {
        self.spans = spans
        self.tracer = tracer
    }

    public func captureContext() -> (any Sendable)? {
        ServiceContext.current
    }

    public func withContext(_ context: any Sendable, delivery: MessageDelivery, _ handler: () -> Void) {
        guard let context = context as? ServiceContext else {
            handler()
            return
        }
        switch spans {
        case .none:
            ServiceContext.$current.withValue(context) { handler() }
        case .perMessage:
            let tracer = self.tracer ?? InstrumentationSystem.tracer
            let typeName = names.name(of: delivery.messageType)
            let name = "\(delivery.actor) handles \(typeName)"
            tracer.withSpan(name, context: context, ofKind: delivery.isAsk ? .server : .consumer) { span in
                span.attributes["troupe.actor"] = "\(delivery.actor)"
                span.attributes["troupe.message_type"] = typeName
                handler()
            }
        }
    }
}

/// Message type names without their module, made once per type (reflection costs microseconds).
final class TypeNames: Sendable {
    private let cache = Mutex<[ObjectIdentifier: String]>([:])

    func name(of type: any Any.Type) -> String {
        let key = ObjectIdentifier(type)
        if let known = cache.withLock({ $0[key] }) { return known }
        let full = String(reflecting: type)
        let name = full.split(separator: ".", maxSplits: 1).last.map(String.init) ?? full
        cache.withLock { $0[key] = name }
        return name
    }
}
