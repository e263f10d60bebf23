#if canImport(Glibc)
    import Glibc
#endif

/// A loopback port where a dial hangs: a listener with a backlog of 0 whose accept queue is
/// filled by one connection nobody accepts, so Linux drops every further SYN and a connect waits
/// in SYN_SENT until its own timeout. For tests of what happens to a dial in progress.
public final class UnansweredPort: Sendable {
    public let port: Int
    private let listener: Int32
    private let filler: RawSocket

    /// Throws if the socket cannot be made, or if a probe connect is answered anyway.
    public init() throws(RawSocketError) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawSocketError(call: "socket", errno: errno) }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening =
            RawSocket.withAddress("127.0.0.1", port: 0) { bind(fd, $0, $1) } == 0 && listen(fd, 0) == 0
            && withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            } == 0
        guard listening else {
            let error = RawSocketError(call: "bind/listen", errno: errno)
            Glibc.close(fd)
            throw error
        }
        listener = fd
        port = Int(UInt16(bigEndian: bound.sin_port))
        do {
            filler = try RawSocket(port: port)
        } catch {
            Glibc.close(fd)
            throw error
        }
        guard !Self.probeIsAnswered(port: port) else {
            Glibc.close(fd)
            throw RawSocketError(call: "connect (a probe to the full listener was answered)", errno: EISCONN)
        }
    }

    deinit { Glibc.close(listener) }

    /// Whether a non-blocking connect to `port` completes within 300 ms.
    private static func probeIsAnswered(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return true }
        defer { Glibc.close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        guard RawSocket.withAddress("127.0.0.1", port: port, { connect(fd, $0, $1) }) != 0, errno == EINPROGRESS
        else { return true }
        var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return poll(&poller, 1, 300) != 0
    }
}
