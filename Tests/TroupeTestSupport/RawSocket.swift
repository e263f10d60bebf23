#if canImport(Glibc)
    import Glibc
#endif

/// A plain TCP client socket for tests that speak a wire format byte by byte, as an attacker
/// would (the cluster's adversary tests, the observer's HTTP and WebSocket limits). Non-blocking
/// and polled with short sleeps, so it never holds a cooperative thread.
public final class RawSocket: @unchecked Sendable {  // used by one test task at a time
    public let fd: Int32

    /// Takes ownership of a connected descriptor (closed on deinit).
    public init(fd: Int32) {
        self.fd = fd
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// Connects to 127.0.0.1:`port`, from `source` (another loopback address) if given, with a
    /// receive buffer of `receiveBufferSize` bytes if given (a reader the server soon cannot
    /// write to). Throws the errno name when the socket cannot be made, bound or connected.
    public convenience init(port: Int, source: String? = nil, receiveBufferSize: Int? = nil) throws(RawSocketError) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawSocketError(call: "socket", errno: errno) }
        if var size = receiveBufferSize.map(Int32.init) {
            // Before the connect: the window offered at the handshake depends on it.
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let source, Self.withAddress(source, port: 0, { bind(fd, $0, $1) }) != 0 {
            let error = RawSocketError(call: "bind", errno: errno)
            Glibc.close(fd)
            throw error
        }
        guard Self.withAddress("127.0.0.1", port: port, { connect(fd, $0, $1) }) == 0 else {
            let error = RawSocketError(call: "connect", errno: errno)
            Glibc.close(fd)
            throw error
        }
        self.init(fd: fd)
    }

    deinit { Glibc.close(fd) }

    /// Calls `body` (bind or connect) with the IPv4 address `ip`:`port`.
    static func withAddress(
        _ ip: String, port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, ip, &address.sin_addr)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// Sends all of `bytes` (false if the peer closed or reset the connection).
    @discardableResult
    public func send(_ bytes: [UInt8]) async -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
            } else if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                try? await Task.sleep(for: .milliseconds(1))
            } else {
                return false
            }
        }
        return true
    }

    @discardableResult
    public func send(_ text: String) async -> Bool { await send(Array(text.utf8)) }

    /// Reads exactly `count` bytes, or nil if the connection closed or they did not all come
    /// within `timeout`.
    public func read(_ count: Int, within timeout: Duration = .seconds(5)) async -> [UInt8]? {
        var bytes: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < count {
            let wanted = min(chunk.count, count - bytes.count)
            let got = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, wanted, 0) }
            if got > 0 {
                bytes += chunk[0..<got]
            } else if got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                guard ContinuousClock.now < deadline else { return nil }
                try? await Task.sleep(for: .milliseconds(2))
            } else {
                return nil
            }
        }
        return bytes
    }

    /// Reads until `isComplete` holds for what came so far, the connection closes, or `timeout`
    /// passes; returns what came (possibly incomplete: check it).
    public func read(within timeout: Duration = .seconds(5), until isComplete: ([UInt8]) -> Bool) async -> [UInt8] {
        var bytes: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !isComplete(bytes), ContinuousClock.now < deadline {
            let got = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if got > 0 {
                bytes += chunk[0..<got]
            } else if got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                try? await Task.sleep(for: .milliseconds(2))
            } else {
                break
            }
        }
        return bytes
    }

    /// Whether the peer closed the connection within `timeout` (reads and drops what it sends).
    public func closedByPeer(within timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        var sink = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            let got = sink.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return true }
            if got < 0 { try? await Task.sleep(for: .milliseconds(5)) }
        }
        return false
    }
}

/// A socket call that failed, with its errno.
public struct RawSocketError: Error, CustomStringConvertible {
    public let call: String
    public let errno: Int32
    public var description: String { "\(call) failed: \(String(cString: strerror(errno)))" }
}
