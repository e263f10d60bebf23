import Troupe

/// Which children a restart or a stop decided for one failing child applies to.
public enum RestartScope: Sendable, Hashable, CustomStringConvertible {
    /// Only the failing child (and the actors linked to it).
    case oneForOne
    /// Every child of the supervisor (and the actors linked to them).
    case allForOne
    /// The failing child and every child supervised after it, in supervision order (and the
    /// actors linked to them): for children that depend on those started before them.
    case restForOne

    public var description: String {
        switch self {
        case .oneForOne: "oneForOne"
        case .allForOne: "allForOne"
        case .restForOne: "restForOne"
        }
    }
}
