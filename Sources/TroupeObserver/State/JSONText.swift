/// A JSON document written in one pass into a string: the observer's pushes are built many
/// times a second, so without Foundation's encoder and its intermediate values.
struct JSONText {
    private(set) var text = ""
    /// Whether the next member of the innermost object or array needs a comma before it.
    private var needsComma = false

    init(capacity: Int = 4096) { text.reserveCapacity(capacity) }

    mutating func object(_ body: (inout JSONText) -> Void) { container("{", "}", body) }

    mutating func array(_ body: (inout JSONText) -> Void) { container("[", "]", body) }

    private mutating func container(_ open: String, _ close: String, _ body: (inout JSONText) -> Void) {
        separate()
        text += open
        needsComma = false
        body(&self)
        text += close
        needsComma = true
    }

    /// A member's name; the value follows.
    mutating func key(_ name: String) {
        separate()
        Self.quote(name, into: &text)
        text += ":"
        needsComma = false
    }

    mutating func value(_ string: String?) {
        separate()
        if let string { Self.quote(string, into: &text) } else { text += "null" }
        needsComma = true
    }

    mutating func value(_ number: some BinaryInteger) {
        separate()
        text += String(number)
        needsComma = true
    }

    mutating func value(_ number: Int?) {
        if let number { value(number) } else { null() }
    }

    /// A finite number with at most three decimals.
    mutating func value(_ number: Double) {
        separate()
        text += number.isFinite ? String((number * 1000).rounded() / 1000) : "null"
        needsComma = true
    }

    mutating func value(_ flag: Bool) {
        separate()
        text += flag ? "true" : "false"
        needsComma = true
    }

    mutating func null() {
        separate()
        text += "null"
        needsComma = true
    }

    mutating func member(_ name: String, _ string: String?) { key(name); value(string) }
    mutating func member(_ name: String, _ number: some BinaryInteger) { key(name); value(number) }
    mutating func member(_ name: String, _ number: Int?) { key(name); value(number) }
    mutating func member(_ name: String, _ number: Double) { key(name); value(number) }
    mutating func member(_ name: String, _ flag: Bool) { key(name); value(flag) }

    private mutating func separate() {
        if needsComma { text += "," }
    }

    /// `string` as a JSON string: quotes, backslashes and control characters escaped, and `<`
    /// too, so that a name can never close a script element.
    static func quote(_ string: String, into text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "<": text += "\\u003c"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
