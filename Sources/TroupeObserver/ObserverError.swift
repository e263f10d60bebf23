/// Why an ``Observer`` could not start.
public enum ObserverError: Error, Sendable, Equatable, CustomStringConvertible {
    /// ``ObserverSettings/host`` is not loopback, there is no ``ObserverSettings/security``, and
    /// ``ObserverSettings/allowsUnencryptedRemoteAccess`` is off.
    case remoteAccessNeedsOptIn(host: String)
    /// A given ``ObserverSettings/token`` shorter than 16 characters.
    case tokenTooShort(length: Int)
    /// A setting out of range; the text names it.
    case invalidSetting(String)
    /// Listening failed (the port is taken, the address is not this machine's): the system's
    /// error.
    case bindFailed(host: String, port: Int, reason: String)
    /// The observer's event-loop thread did not take its first task (the process is out of
    /// threads or shutting down): the system's error.
    case threadFailed(reason: String)

    public var description: String {
        switch self {
        case .remoteAccessNeedsOptIn(let host):
            "the observer would serve \(host), which is not loopback, over plain HTTP: give ObserverSettings.security an ObserverTLS (product TroupeObserverTLS), serve 127.0.0.1 and reach it through an SSH tunnel, or set allowsUnencryptedRemoteAccess on a network you trust"
        case .tokenTooShort(let length):
            "the observer's token has \(length) characters; give at least 16, or nil for a random one"
        case .invalidSetting(let text): "observer settings: \(text)"
        case .bindFailed(let host, let port, let reason): "the observer could not listen on \(host):\(port): \(reason)"
        case .threadFailed(let reason): "the observer's thread did not start: \(reason)"
        }
    }
}
