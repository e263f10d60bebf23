/// Text that came from a peer, made safe to put in a log line or a reply: control characters,
/// quotes and backslashes escaped (a newline cannot forge a log line), anything outside
/// printable ASCII written as `\u{…}`, and cut to ``maximumCharacters`` with an ellipsis and
/// the original length (a 16 KiB name costs a short line, not 16 KiB echoed back).
struct PeerText: CustomStringConvertible, Sendable {
    static let maximumCharacters = 64
    let description: String

    init(_ text: String, limit: Int = PeerText.maximumCharacters) {
        var out = ""
        out.reserveCapacity(min(text.utf8.count, limit) + 8)
        var written = 0
        var total = 0
        for scalar in text.unicodeScalars {
            total += 1
            guard written < limit else { continue }
            written += 1
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case " "..."~": out.unicodeScalars.append(scalar)
            default: out += "\\u{\(String(scalar.value, radix: 16))}"
            }
        }
        if total > limit { out += "…(\(total) characters)" }
        description = out
    }
}
