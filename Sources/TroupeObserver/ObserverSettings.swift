import TroupeAddresses

/// How an ``Observer`` serves its page: where it listens, the token every request must carry,
/// how often it pushes updates and the limits it holds every connection to.
public struct ObserverSettings: Sendable {
    /// The address to listen on. Loopback (`127.0.0.1`, `::1`, `localhost`) by default; any
    /// other address needs ``security`` (TLS: the `TroupeObserverTLS` product), or
    /// ``allowsUnencryptedRemoteAccess`` to send the page and its token in plain HTTP.
    public var host: String
    /// The port; 0 picks a free one (read it from ``Observer/port``).
    public var port: Int
    /// The secret every request must carry (`?token=` in the URL, or `Authorization: Bearer`):
    /// nil makes a random one of 128 bits, which ``Observer/url`` includes. At least 16
    /// characters when given.
    public var token: String?
    /// Serve on an address other than loopback without TLS. Anyone on that network path can
    /// read the token and the page: opt in only on a network you trust.
    public var allowsUnencryptedRemoteAccess: Bool
    /// What secures each connection (`ObserverTLS` from the `TroupeObserverTLS` product: the page
    /// is then served over HTTPS); nil for plain HTTP.
    public var security: (any ObserverSecurity)?
    /// How often a connected page gets an update, at most (it gets one only when something it
    /// shows has changed). At least 100 ms: ten updates a second.
    public var updateInterval: Duration
    /// Connections open at once, pages and API requests together; later ones are closed at
    /// once.
    public var maxConnections: Int
    /// How long a connection may stay silent before the observer closes it (a page's WebSocket
    /// excepted: it is kept while the page is open).
    public var idleTimeout: Duration

    public init(
        host: String = "127.0.0.1",
        port: Int = 0,
        token: String? = nil,
        allowsUnencryptedRemoteAccess: Bool = false,
        updateInterval: Duration = .milliseconds(500),
        maxConnections: Int = 32,
        idleTimeout: Duration = .seconds(30),
        security: (any ObserverSecurity)? = nil
    ) {
        self.security = security
        self.host = host
        self.port = port
        self.token = token
        self.allowsUnencryptedRemoteAccess = allowsUnencryptedRemoteAccess
        self.updateInterval = updateInterval
        self.maxConnections = maxConnections
        self.idleTimeout = idleTimeout
    }

    /// Whether ``host`` names this machine's loopback interface: `localhost`, an IPv4 address in
    /// 127.0.0.0/8, `::1` or `::ffff:127.x.x.x`. Only addresses count, never names that merely
    /// start with `127.` (`127.example.com` is somebody else's machine).
    var isLoopback: Bool { HostAddress.isLoopback(host) }

    /// The settings checked: a typed error says what to change.
    func validated() throws(ObserverError) -> ObserverSettings {
        guard isLoopback || security != nil || allowsUnencryptedRemoteAccess else {
            throw .remoteAccessNeedsOptIn(host: host)
        }
        if let token, token.utf8.count < 16 { throw .tokenTooShort(length: token.utf8.count) }
        guard (0...65_535).contains(port) else { throw .invalidSetting("port \(port) is not in 0...65535") }
        guard updateInterval >= .milliseconds(100) else {
            throw .invalidSetting("updateInterval \(updateInterval) is below 100 ms (ten updates a second)")
        }
        guard maxConnections >= 1 else { throw .invalidSetting("maxConnections \(maxConnections) is below 1") }
        guard idleTimeout > .zero else { throw .invalidSetting("idleTimeout \(idleTimeout) is not positive") }
        return self
    }
}
