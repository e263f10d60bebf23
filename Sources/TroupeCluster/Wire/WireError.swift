/// Why a frame or an envelope was refused. Any of these closes the connection it came on: the
/// peer is broken or hostile, and nothing it sent is used.
public enum WireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The frame's length exceeds ``ClusterSettings/maximumFrameSize`` (or, before the peer has
    /// proved the secret, ``ClusterConnectionLimits/unauthenticatedFrameSize``).
    case frameTooLarge(length: Int, maximum: Int)
    /// The envelope speaks a wire version this node does not.
    case unsupportedVersion(UInt8)
    /// The envelope's kind is not one this version defines.
    case unknownKind(UInt8)
    /// The envelope ended early, a count or length was out of range, or bytes were left over.
    case malformed(String)
    /// A frame was started and not finished within ``ClusterConnectionLimits/incompleteFrameTimeout``.
    case incompleteFrame(received: Int, announced: Int, timeout: Duration)

    public var description: String {
        switch self {
        case .frameTooLarge(let length, let maximum): "frame of \(length) bytes exceeds the maximum of \(maximum)"
        case .unsupportedVersion(let version): "unsupported wire version \(version)"
        case .unknownKind(let kind): "unknown envelope kind \(kind)"
        case .malformed(let why): "malformed envelope: \(why)"
        case .incompleteFrame(let received, let announced, let timeout):
            "a frame of \(announced) bytes was still incomplete (\(received) received) after \(timeout)"
        }
    }
}
