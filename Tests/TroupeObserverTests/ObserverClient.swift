import Foundation
import TroupeTestSupport

/// An HTTP/1.1 reply as a raw client read it.
struct RawReply {
    let status: Int
    let headers: [String: String]
    let body: String

    var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
    }

    /// The rows of an `/api/state` document.
    var actors: [[String: Any]] { json?["actors"] as? [[String: Any]] ?? [] }
}

/// Speaks HTTP/1.1 and WebSocket to the observer byte by byte over ``RawSocket``, as any
/// client on the machine could.
enum ObserverClient {
    /// Sends `request` (a whole request, head and body) on a new connection and reads one
    /// reply; nil when the connection closed before a whole reply came.
    static func exchange(port: Int, _ request: String) async throws -> RawReply? {
        let socket = try RawSocket(port: port)
        await socket.send(request)
        return await readReply(socket)
    }

    static func get(port: Int, _ target: String, headers: String = "") async throws -> RawReply? {
        try await exchange(
            port: port, "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\(headers)\r\n")
    }

    static func post(port: Int, _ target: String) async throws -> RawReply? {
        try await exchange(
            port: port, "POST \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }

    static func readReply(_ socket: RawSocket) async -> RawReply? {
        let bytes = await socket.read(within: .seconds(10)) { bytes in
            guard let (_, headers, bodyStart) = parseHead(bytes) else { return false }
            return bytes.count - bodyStart >= Int(headers["content-length"] ?? "0") ?? 0
        }
        guard let (status, headers, bodyStart) = parseHead(bytes) else { return nil }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        guard bytes.count - bodyStart >= length else { return nil }
        return RawReply(
            status: status, headers: headers,
            body: String(decoding: bytes[bodyStart..<bodyStart + length], as: UTF8.self))
    }

    /// The status, the headers (names lowercased) and where the body starts, once the head
    /// has fully arrived.
    static func parseHead(_ bytes: [UInt8]) -> (Int, [String: String], Int)? {
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        guard bytes.count >= 4, let index = (0...(bytes.count - 4)).first(where: { Array(bytes[$0..<$0 + 4]) == end })
        else { return nil }
        let lines = String(decoding: bytes[..<index], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return (status, headers, index + 4)
    }

    /// Opens a WebSocket at `target`; the socket and the status of the upgrade reply (101 when
    /// it was accepted).
    static func openWebSocket(
        port: Int, _ target: String, receiveBufferSize: Int? = nil
    ) async throws -> (RawSocket, Int?) {
        let socket = try RawSocket(port: port, receiveBufferSize: receiveBufferSize)
        await socket.send(
            "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        // One byte at a time up to the head's end: the first frame may come in the same
        // segment, and it must be left for `readFrame`.
        var head: [UInt8] = []
        while !head.suffix(4).elementsEqual("\r\n\r\n".utf8), let byte = await socket.read(1, within: .seconds(10)) {
            head += byte
        }
        return (socket, parseHead(head)?.0)
    }

    /// Reads one server frame (unmasked): its opcode and payload; nil when none came in time.
    static func readFrame(_ socket: RawSocket, within timeout: Duration = .seconds(10)) async -> (UInt8, [UInt8])? {
        guard let start = await socket.read(2, within: timeout) else { return nil }
        var length = Int(start[1] & 0x7f)
        if length == 126 {
            guard let extended = await socket.read(2, within: timeout) else { return nil }
            length = Int(extended[0]) << 8 | Int(extended[1])
        } else if length == 127 {
            guard let extended = await socket.read(8, within: timeout) else { return nil }
            length = extended.reduce(0) { $0 << 8 | Int($1) }
        }
        guard let payload = await socket.read(length, within: timeout) else { return nil }
        return (start[0] & 0x0f, payload)
    }

    /// The next text frame parsed as a document.
    static func readDocument(_ socket: RawSocket, within timeout: Duration = .seconds(10)) async -> [String: Any]? {
        guard let (opcode, payload) = await readFrame(socket, within: timeout), opcode == 1 else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any]
    }

    /// What a page does with a message (the page's `merge`): a whole document replaces what it
    /// holds; a delta (`"delta": true`) is merged into it: system members, the view and job
    /// lanes whole, changed rows, and the rows' order when given (rows left out of it are gone).
    static func merge(_ message: [String: Any], into held: [String: Any]?) -> [String: Any] {
        guard message["delta"] as? Bool == true, var document = held else { return message }
        document["uptimeSeconds"] = message["uptimeSeconds"]
        if let members = message["system"] as? [String: Any], var system = document["system"] as? [String: Any] {
            system.merge(members) { _, new in new }
            document["system"] = system
        }
        if let view = message["view"] { document["view"] = view }
        if let lanes = message["jobLanes"] { document["jobLanes"] = lanes }
        let held = document["actors"] as? [[String: Any]] ?? []
        let changed = message["actors"] as? [[String: Any]] ?? []
        if !changed.isEmpty || message["actorOrder"] != nil {
            var rows: [Int: [String: Any]] = [:]
            for row in held + changed { rows[row["id"] as? Int ?? -1] = row }
            let order = message["actorOrder"] as? [Int] ?? held.map { $0["id"] as? Int ?? -1 }
            document["actors"] = order.map { rows[$0] ?? ["missing": $0] }
        }
        return document
    }

    /// A client frame (masked, as a client must send): `opcode` with `payload`.
    static func clientFrame(opcode: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        var frame: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count < 65536 {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xff) }
        }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return frame
    }
}
