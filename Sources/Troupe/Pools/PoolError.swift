/// What is wrong with a pool's configuration.
public enum PoolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A pool needs at least one member.
    case invalidSize(Int)
    /// A growing pool's maximum must be at least its initial size.
    case invalidMaximum(size: Int, maximum: Int)

    public var description: String {
        switch self {
        case .invalidSize(let size):
            return "a pool needs at least 1 member, got size \(size); pass `size: 1` or more"
        case .invalidMaximum(let size, let maximum):
            return "a growing pool's maximum (\(maximum)) is below its initial size (\(size)); "
                + "use `.firstFreeOrGrow(upTo: \(size))` or more, or a smaller size"
        }
    }
}
