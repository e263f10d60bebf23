/// The last events of a run that matter to a reader (faults, membership changes, violations),
/// each with its virtual time: printed with a failing seed, it is the story that led there.
/// A ring: the oldest lines go first.
public struct SimulationTrace: Sendable, CustomStringConvertible {
    public let capacity: Int
    private var lines: [String] = []
    private var next = 0
    public private(set) var dropped = 0

    public init(capacity: Int) { self.capacity = max(0, capacity) }

    mutating func record(_ at: Int64, _ line: @autoclosure () -> String) {
        guard capacity > 0 else { return }
        let text = "\(formatted(at)) \(line())"
        if lines.count < capacity {
            lines.append(text)
        } else {
            lines[next] = text
            next = (next + 1) % capacity
            dropped += 1
        }
    }

    /// Oldest first.
    public var events: [String] { Array(lines[next...] + lines[..<next]) }

    public var description: String {
        ((dropped > 0 ? ["… \(dropped) earlier events"] : []) + events).joined(separator: "\n")
    }

    private func formatted(_ nanoseconds: Int64) -> String {
        let milliseconds = nanoseconds / 1_000_000
        let fraction = String(milliseconds % 1_000)
        return "[\(milliseconds / 1_000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction) s]"
    }
}
