import Troupe

/// What one page (or one API request) asks to see of the actors: the sort key, a search text
/// and how many rows. Parsed from a query string (`sort=depth&q=cart&limit=50`), which comes
/// from a stranger until the token is checked: every field is bounded.
struct ActorView: Equatable, Sendable {
    enum SortKey: String, CaseIterable, Sendable {
        /// Messages taken from the mailbox so far, most first.
        case processed
        /// Messages waiting, most first (actors that do not count theirs last).
        case depth
        case failures
        case restarts
        /// Name (then address) in ascending order.
        case name
    }

    var sort: SortKey = .processed
    /// Lowercased; matched against the name, the address's `#ID` and the definition's type.
    var query = ""
    var limit = 50

    static let maximumLimit = 500
    static let maximumQueryLength = 100

    /// The view a query string asks for; unknown fields and bad values keep the defaults.
    init(query string: Substring = "") {
        for (name, value) in QueryString.pairs(string) {
            switch name {
            case "sort": sort = SortKey(rawValue: value) ?? sort
            case "q": query = String(value.lowercased().prefix(Self.maximumQueryLength))
            case "limit": limit = Int(value).map { min(max($0, 1), Self.maximumLimit) } ?? limit
            default: continue
            }
        }
    }

    /// The core's ranking for this view's sort key.
    var ranking: ActorRanking {
        switch sort {
        case .processed: .messagesProcessed
        case .depth: .mailboxDepth
        case .failures: .failures
        case .restarts: .restarts
        case .name: .name
        }
    }
}

/// `name=value&…` pairs of a URL's query, percent-decoded (`+` is a space).
enum QueryString {
    static func pairs(_ string: Substring) -> [(String, String)] {
        string.split(separator: "&").prefix(16).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }

    static func value(of name: String, in string: Substring) -> String? {
        pairs(string).first { $0.0 == name }?.1
    }

    static func decode(_ part: Substring) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(part.utf8.count)
        var iterator = part.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return String(decoding: bytes, as: UTF8.self) }
                bytes.append(value)
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
