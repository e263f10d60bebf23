/// An actor timer's key. `Int` and `String` keys, the usual ones, are stored and hashed as
/// themselves (a 24-byte table slot, no `AnyHashable` witness calls); any other key is kept
/// as `AnyHashable` in a box.
enum TimerKey: Hashable {
    case int(Int)
    case string(String)
    case other(AnyKey)

    final class AnyKey: Hashable {
        let value: AnyHashable
        init(_ value: AnyHashable) { self.value = value }
        static func == (lhs: AnyKey, rhs: AnyKey) -> Bool { lhs.value == rhs.value }
        func hash(into hasher: inout Hasher) { hasher.combine(value) }
    }

    @inline(__always)
    init<Key: Hashable & Sendable>(_ key: Key) {
        if Key.self == Int.self {
            // Safety: `Key` is `Int` (checked just above), so the cast is an identity.
            self = .int(unsafeBitCast(key, to: Int.self))
        } else if Key.self == String.self {
            // Safety: `Key` is `String` (checked just above), so the cast is an identity.
            self = .string(unsafeBitCast(key, to: String.self))
        } else {
            self = TimerKey(normalizing: AnyHashable(key))
        }
    }

    /// Any other key, including one already erased to `AnyHashable`. AnyHashable makes
    /// integers of every width equal by value, so integer keys all become `.int`.
    private init(normalizing hashable: AnyHashable) {
        if let integer = hashable.base as? any BinaryInteger, let value = Int(exactly: integer) {
            self = .int(value)
        } else if let string = hashable.base as? String {
            self = .string(string)
        } else {
            self = .other(AnyKey(hashable))
        }
    }
}
