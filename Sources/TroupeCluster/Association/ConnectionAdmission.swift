/// Admission control for connections, before and after authentication: how many are open, how
/// many have not proved the secret yet (in all and per source host), and how fast each host may
/// start handshakes (a token bucket). A connection over a limit is closed at once, before a
/// byte of it is read, and counted; nothing else is spent on it.
///
/// Not thread-safe: ``ClusterSystem`` keeps it under a lock of its own, taken with no other lock
/// held (see ``ClusterSystem``'s lock order).
struct ConnectionAdmission {
    let limits: ClusterConnectionLimits
    private(set) var open = 0
    private(set) var unauthenticated = 0
    private var unauthenticatedByHost: [String: Int] = [:]
    private var buckets: [String: Bucket] = [:]
    /// Connections refused by admission control so far.
    private(set) var refused = 0

    /// What an admitted connection holds, to be released when it closes.
    struct Ticket: Sendable {
        let host: String
        let inbound: Bool
    }

    enum Refusal: Error, Equatable, CustomStringConvertible {
        case tooManyConnections(Int)
        case tooManyUnauthenticated(Int)
        case tooManyUnauthenticatedFromHost(Int)
        case handshakeRate(Double)

        var description: String {
            switch self {
            case .tooManyConnections(let limit): "\(limit) connections are open (maximumConnections)"
            case .tooManyUnauthenticated(let limit):
                "\(limit) connections are still handshaking (maximumUnauthenticatedConnections)"
            case .tooManyUnauthenticatedFromHost(let limit):
                "\(limit) connections from this host are still handshaking (maximumUnauthenticatedConnectionsPerHost)"
            case .handshakeRate(let rate):
                "more than \(rate) handshakes a second from this host (handshakesPerSecondPerHost)"
            }
        }
    }

    /// Tokens of one host: refilled at `handshakesPerSecondPerHost`, up to twice that.
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    /// The most hosts whose buckets are remembered: past it, full buckets are forgotten, and
    /// if none is full a new host is refused (a flood from many addresses costs bounded memory).
    static let maximumTrackedHosts = 4096

    init(limits: ClusterConnectionLimits) { self.limits = limits }

    /// An inbound connection from `host`: a ticket, or why not.
    mutating func admitInbound(host: String, now: ContinuousClock.Instant) -> Result<Ticket, Refusal> {
        guard open < limits.maximumConnections else { return refuse(.tooManyConnections(limits.maximumConnections)) }
        guard unauthenticated < limits.maximumUnauthenticatedConnections else {
            return refuse(.tooManyUnauthenticated(limits.maximumUnauthenticatedConnections))
        }
        let fromHost = unauthenticatedByHost[host, default: 0]
        guard fromHost < limits.maximumUnauthenticatedConnectionsPerHost else {
            return refuse(.tooManyUnauthenticatedFromHost(limits.maximumUnauthenticatedConnectionsPerHost))
        }
        guard takeToken(host: host, now: now) else { return refuse(.handshakeRate(limits.handshakesPerSecondPerHost)) }
        open += 1
        unauthenticated += 1
        unauthenticatedByHost[host] = fromHost + 1
        return .success(Ticket(host: host, inbound: true))
    }

    /// A connection this node dials: only the total is limited (this node chose the peer).
    mutating func admitOutbound(host: String) -> Result<Ticket, Refusal> {
        guard open < limits.maximumConnections else { return refuse(.tooManyConnections(limits.maximumConnections)) }
        open += 1
        return .success(Ticket(host: host, inbound: false))
    }

    /// The connection's peer proved the secret.
    mutating func authenticated(_ ticket: Ticket) {
        guard ticket.inbound else { return }
        releaseUnauthenticated(ticket.host)
    }

    /// The connection closed; `wasAuthenticated` says whether ``authenticated(_:)`` was called.
    mutating func closed(_ ticket: Ticket, wasAuthenticated: Bool) {
        open -= 1
        if ticket.inbound && !wasAuthenticated { releaseUnauthenticated(ticket.host) }
    }

    private mutating func releaseUnauthenticated(_ host: String) {
        unauthenticated -= 1
        let left = unauthenticatedByHost[host, default: 1] - 1
        unauthenticatedByHost[host] = left > 0 ? left : nil
    }

    private mutating func refuse(_ reason: Refusal) -> Result<Ticket, Refusal> {
        refused += 1
        return .failure(reason)
    }

    private mutating func takeToken(host: String, now: ContinuousClock.Instant) -> Bool {
        let rate = limits.handshakesPerSecondPerHost
        let capacity = max(1, rate * 2)
        var bucket = buckets[host] ?? Bucket(tokens: capacity, updated: now)
        bucket.tokens = min(capacity, bucket.tokens + Self.seconds(now - bucket.updated) * rate)
        bucket.updated = now
        guard bucket.tokens >= 1 else {
            buckets[host] = bucket
            return false
        }
        bucket.tokens -= 1
        if buckets[host] == nil && buckets.count >= Self.maximumTrackedHosts {
            forgetFullBuckets(now: now)
            guard buckets.count < Self.maximumTrackedHosts else { return false }
        }
        buckets[host] = bucket
        return true
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Drops the buckets that have refilled (their hosts start afresh as if new).
    private mutating func forgetFullBuckets(now: ContinuousClock.Instant) {
        let rate = limits.handshakesPerSecondPerHost
        let capacity = max(1, rate * 2)
        buckets = buckets.filter { _, bucket in bucket.tokens + Self.seconds(now - bucket.updated) * rate < capacity }
    }
}
