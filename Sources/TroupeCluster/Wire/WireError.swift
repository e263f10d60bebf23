/// Why a frame or an envelope was refused. Any of these closes the connection it came on: the
/// peer is broken or hostile, and nothing it sent is used.
public enum WireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The frame's length exceeds ``ClusterSettings/maximumFrameSize``.
    case frameTooLarge(length: Int, maximum: Int)
    /// The envelope speaks a wire version this node does not.
    case unsupportedVersion(UInt8)
    /// The envelope's kind is not one this version defines.
    case unknownKind(UInt8)
    /// The envelope ended early, a count or length was out of range, or bytes were left over.
    case malformed(String)

    public var description: String {
        switch self {
        case .frameTooLarge(let length, let maximum): "frame of \(length) bytes exceeds the maximum of \(maximum)"
        case .unsupportedVersion(let version): "unsupported wire version \(version)"
        case .unknownKind(let kind): "unknown envelope kind \(kind)"
        case .malformed(let why): "malformed envelope: \(why)"
        }
    }
}
