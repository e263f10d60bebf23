/// Why a region could not be made.
public enum EntityRegionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The system already has a region of this kind: two would activate the same identity
    /// twice. Keep the first region and share it.
    case duplicateKind(String)

    public var description: String {
        switch self {
        case .duplicateKind(let name):
            "this system already has an EntityRegion of kind \"\(name)\": share that region (two would activate the same identity twice)"
        }
    }
}
