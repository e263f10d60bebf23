import NIOCore

/// What secures an ``Observer``'s connections: handlers put at the front of each new
/// connection's pipeline, before HTTP. The `TroupeObserverTLS` product's `ObserverTLS` is one
/// (TLS on swift-nio-ssl); with it the observer may serve an address other than loopback.
public protocol ObserverSecurity: Sendable {
    /// Adds the handlers to a new connection's `channel`, on its event loop (use
    /// `channel.pipeline.syncOperations`). Throwing closes the connection.
    func secure(_ channel: any Channel) throws
}
