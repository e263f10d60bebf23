import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An observer's address as its URL gives it (`http://HOST:PORT/?token=TOKEN`, or `https://`
/// for an observer served over TLS), and the one request the terminal view makes of it:
/// `GET /api/state` with the view's sort, search and row count, over a plain blocking socket
/// or over TLS (``HTTPSClient``).
struct ObserverEndpoint: Sendable {
    let host: String
    let port: Int
    let token: String
    let usesTLS: Bool
    /// PEM certificates to trust for an `https` observer instead of the system's (a CA of
    /// one's own, or a self-signed certificate).
    let caFile: String?

    /// More than any state document (500 rows): a server that sends more is cut off, over
    /// plain HTTP and TLS alike.
    static let maximumReply = 16 << 20
    /// How long one exchange may take in all, however slowly the server sends.
    static let replyDeadline: Duration = .seconds(5)

    /// Why the state could not be read.
    enum Failure: Error, CustomStringConvertible {
        case badURL(String)
        case https(String)
        case tls(String)
        case unreachable(String)
        case refused(status: Int, body: String)
        case malformed(String)

        var description: String {
            switch self {
            case .badURL(let url):
                "\(url) is not an observer's URL: pass the one the observer printed, http(s)://HOST:PORT/?token=TOKEN"
            case .https(let url):
                "\(url) is served over TLS, which this build of troupe-observe does not speak (it was built without swift-nio-ssl): run it on the observer's machine against a loopback observer, or forward a port (ssh -L) to one"
            case .tls(let reason): "TLS: \(reason)"
            case .unreachable(let reason): "the observer did not answer: \(reason)"
            case .refused(401, _): "the observer refused the token: pass the URL it printed at start, token included"
            case .refused(let status, let body): "the observer answered \(status): \(body)"
            case .malformed(let reason): "the observer's answer could not be read: \(reason)"
            }
        }
    }

    /// Parses an observer's URL: `http` on an IPv4 address or `localhost` (the observer's own
    /// default is loopback), or `https` on any host name or address.
    init(url: String, caFile: String? = nil) throws(Failure) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty,
            let token = components.queryItems?.first(where: { $0.name == "token" })?.value, !token.isEmpty
        else { throw .badURL(url) }
        usesTLS = scheme == "https"
        #if !canImport(NIOSSL)
            if usesTLS { throw .https(url) }
        #endif
        self.host = !usesTLS && host == "localhost" ? "127.0.0.1" : host
        self.port = components.port ?? (usesTLS ? 443 : 80)
        self.token = token
        self.caFile = caFile
    }

    /// The state document for `view`, parsed.
    func state(_ view: TableView) throws(Failure) -> [String: Any] {
        let query = "sort=\(view.sort.rawValue)&limit=\(view.rows)&q=\(Self.percentEncoded(view.search))"
        let (status, body) = try get("/api/state?\(query)")
        guard status == 200 else { throw .refused(status: status, body: String(body.prefix(200))) }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else {
            throw .malformed("not a JSON object")
        }
        return object
    }

    private static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }

    /// One `GET` with the token in a header and `Connection: close`: the status and the body.
    private func get(_ target: String) throws(Failure) -> (Int, String) {
        let request =
            "GET \(target) HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(token)\r\nConnection: close\r\n\r\n"
        let reply: [UInt8]
        if usesTLS {
            #if canImport(NIOSSL)
                reply = try HTTPSClient.shared.exchange(host: host, port: port, request: request, caFile: caFile)
            #else
                throw .https("https://\(host):\(port)/")
            #endif
        } else {
            reply = try plainExchange(Array(request.utf8))
        }
        let text = String(decoding: reply, as: UTF8.self)
        guard let headEnd = text.range(of: "\r\n\r\n"), let statusLine = text.split(separator: "\r\n").first else {
            throw .malformed("no HTTP head")
        }
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw .malformed("status line \(statusLine)") }
        return (status, String(text[headEnd.upperBound...]))
    }

    /// Sends `request` over a plain socket and reads the reply until the observer closes: at
    /// most ``maximumReply`` bytes, within ``replyDeadline`` in all (a server trickling bytes
    /// cannot hold the view).
    func plainExchange(_ request: [UInt8]) throws(Failure) -> [UInt8] {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw .unreachable("\(host) is not an IPv4 address (the observer listens on 127.0.0.1 by default)")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .unreachable(String(cString: strerror(errno))) }
        defer { close(fd) }
        let deadline = ContinuousClock.now + Self.replyDeadline
        // Each wait at most a quarter of a second, so that the deadline is checked between them.
        var timeout = timeval(tv_sec: 0, tv_usec: 250_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw .unreachable("\(host):\(port): \(String(cString: strerror(errno)))") }
        var offset = 0
        while offset < request.count {
            let sent = request[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 || (errno == EAGAIN && ContinuousClock.now < deadline) else {
                throw .unreachable("the connection closed while sending")
            }
            offset += max(0, sent)
        }
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            guard ContinuousClock.now < deadline else {
                throw .unreachable("no complete answer within \(Self.replyDeadline) (\(reply.count) bytes so far)")
            }
            let got = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if got > 0 {
                guard reply.count + got <= Self.maximumReply else {
                    throw .malformed("a reply of more than \(Self.maximumReply) bytes")
                }
                reply += chunk[0..<got]
            } else if got == 0 {
                break
            } else if errno != EAGAIN && errno != EINTR {
                throw .unreachable("reading the answer: \(String(cString: strerror(errno)))")
            }
        }
        return reply
    }
}
