import NIOHTTP1

/// The secret every request must carry, and the check of it.
struct AccessToken: Sendable {
    let value: String

    /// 128 random bits as 32 hexadecimal digits.
    static func random() -> AccessToken {
        var generator = SystemRandomNumberGenerator()
        let words = [generator.next() as UInt64, generator.next() as UInt64]
        return AccessToken(
            value: words.map { word in
                let hex = String(word, radix: 16)
                return String(repeating: "0", count: 16 - hex.count) + hex
            }.joined())
    }

    /// Whether the request carries the token: `?token=` in its URI, or an `Authorization:
    /// Bearer` header. Compared in time that does not depend on where the texts differ.
    func admits(_ head: HTTPRequestHead) -> Bool {
        if let header = head.headers.first(name: "authorization"), header.hasPrefix("Bearer "),
            matches(header.dropFirst("Bearer ".count))
        {
            return true
        }
        let query = RequestTarget(head.uri).query
        return QueryString.value(of: "token", in: query).map { matches(Substring($0)) } ?? false
    }

    func matches(_ candidate: Substring) -> Bool {
        let expected = Array(value.utf8)
        let given = Array(candidate.utf8)
        guard expected.count == given.count else { return false }
        var difference: UInt8 = 0
        for index in expected.indices { difference |= expected[index] ^ given[index] }
        return difference == 0
    }
}

/// A request URI's path and query.
struct RequestTarget {
    let path: Substring
    let query: Substring

    init(_ uri: String) {
        let whole = Substring(uri)
        if let mark = whole.firstIndex(of: "?") {
            path = whole[..<mark]
            query = whole[whole.index(after: mark)...]
        } else {
            (path, query) = (whole, "")
        }
    }
}
