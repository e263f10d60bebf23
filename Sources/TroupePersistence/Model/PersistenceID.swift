/// The identity under which an actor's events and snapshots are stored: one writer at a time,
/// events numbered from 1 without gaps.
///
/// Choose it from what the actor stands for (`"account-42"`), not from its address: a restarted
/// actor, or the same entity on another node, must find its history again.
public struct PersistenceID: Hashable, Sendable, Comparable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The stored form.
    public let rawValue: String

    /// An identity; empty strings and strings longer than ``maximumLength`` UTF-8 bytes are a
    /// misuse (trap), as no store could keep them apart reliably.
    public init(_ rawValue: String) {
        precondition(!rawValue.isEmpty, "a PersistenceID cannot be empty")
        precondition(
            rawValue.utf8.count <= Self.maximumLength,
            "a PersistenceID is at most \(Self.maximumLength) UTF-8 bytes (got \(rawValue.utf8.count))")
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// The longest identity, in UTF-8 bytes.
    public static let maximumLength = 255

    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Which incarnation of an actor may write its events. Each recovery claims a new epoch, and the
/// store refuses writes carrying an older one inside the write itself, so two incarnations of
/// the same identity (a restart race, a second node) can never interleave their events.
public struct WriterEpoch: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let value: Int64
    public init(_ value: Int64) { self.value = value }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.value < rhs.value }
    public var description: String { "epoch \(value)" }
}
