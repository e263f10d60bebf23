import Distributed
import NIOCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Records a remote call's arguments (each encoded by the cluster's coder) and generic
/// substitutions (by mangled name). Made by the Swift runtime through
/// ``ClusterSystem/makeInvocationEncoder()``; one per call, on the caller's thread.
public struct ClusterInvocationEncoder: DistributedTargetInvocationEncoder {
    public typealias SerializationRequirement = any Codable
    let coder: any ClusterCoder
    var arguments: [ByteBuffer] = []
    var genericSubstitutions: [String] = []

    init(coder: any ClusterCoder) { self.coder = coder }

    public mutating func recordGenericSubstitution<T>(_ type: T.Type) throws {
        guard let name = _mangledTypeName(type) else {
            throw ClusterCallError.serialization(type: "\(type)", reason: "the type has no mangled name")
        }
        genericSubstitutions.append(name)
    }

    public mutating func recordArgument<Value: Codable>(_ argument: RemoteCallArgument<Value>) throws {
        var buffer = ByteBuffer()
        do {
            try coder.encode(argument.value, into: &buffer)
        } catch {
            throw ClusterCallError.serialization(type: String(reflecting: Value.self), reason: "\(error)")
        }
        arguments.append(buffer)
    }

    public mutating func recordErrorType<E: Error>(_ type: E.Type) throws {}
    public mutating func recordReturnType<R: Codable>(_ type: R.Type) throws {}
    public mutating func doneRecording() throws {}
}

/// Hands a received invocation's arguments to the Swift runtime, decoding each with the
/// cluster's coder; a value that does not decode throws ``ClusterCallError/serialization(type:reason:)``
/// naming its type.
public struct ClusterInvocationDecoder: DistributedTargetInvocationDecoder {
    public typealias SerializationRequirement = any Codable
    let system: ClusterSystem
    let arguments: [ByteBuffer]
    let genericSubstitutions: [String]
    var nextArgument = 0

    init(system: ClusterSystem, invocation: WireEnvelope.Invocation) {
        self.system = system
        arguments = invocation.arguments
        genericSubstitutions = invocation.genericSubstitutions
    }

    public mutating func decodeGenericSubstitutions() throws -> [Any.Type] {
        try genericSubstitutions.map { name in
            guard let type = _typeByName(name) else {
                throw ClusterCallError.invalidInvocation("unknown generic substitution \(name)")
            }
            return type
        }
    }

    public mutating func decodeNextArgument<Argument: Codable>() throws -> Argument {
        guard nextArgument < arguments.count else {
            throw ClusterCallError.invalidInvocation(
                "missing argument \(nextArgument + 1) of type \(String(reflecting: Argument.self))")
        }
        defer { nextArgument += 1 }
        do {
            return try system.decodeValue(Argument.self, from: arguments[nextArgument])
        } catch {
            throw ClusterCallError.serialization(type: String(reflecting: Argument.self), reason: "\(error)")
        }
    }

    public mutating func decodeErrorType() throws -> Any.Type? { nil }
    public mutating func decodeReturnType() throws -> Any.Type? { nil }
}

/// Sends a local invocation's outcome back to the caller's node.
public struct ClusterResultHandler: DistributedTargetInvocationResultHandler {
    public typealias SerializationRequirement = any Codable
    let system: ClusterSystem
    let callID: UInt64
    let association: Association

    public func onReturn<Success: Codable>(value: Success) async throws { reply(with: value) }

    public func onReturnVoid() async throws { replyVoid() }

    public func onThrow<Err: Error>(error: Err) async throws { reply(throwing: error) }

    // The replies themselves, synchronous and with the value's conformance passed in: the
    // runtime calls `onReturn` as an ad-hoc requirement, whose entry looks up `Encodable` and
    // `Decodable` for `Success` on every call, and an async call may also suspend. A resolved
    // target (`ResolvedTarget`) knows its result type's conformance and calls these directly.

    /// Encodes `value` and sends it as the call's result; an encoding failure is sent instead,
    /// naming the type.
    func reply<Success: Encodable>(with value: Success) {
        var buffer = ByteBuffer()
        do {
            try system.settings.coder.encode(value, into: &buffer)
        } catch {
            let failure = WireEnvelope.RemoteFailure(
                code: .serialization, typeName: String(reflecting: Success.self), message: "\(error)")
            return send(.failure(failure))
        }
        // A reply over the peer's frame limit would close the connection it travels on: the
        // caller gets a serialization failure that says what to raise instead.
        let frameSize = 24 + buffer.readableBytes
        guard frameSize <= system.settings.maximumFrameSize else {
            let failure = WireEnvelope.RemoteFailure(
                code: .serialization, typeName: String(reflecting: Success.self),
                message:
                    "the result encodes to a frame of \(frameSize) bytes, over ClusterSettings.maximumFrameSize (\(system.settings.maximumFrameSize)); raise it on every node"
            )
            return send(.failure(failure))
        }
        send(.value(buffer))
    }

    func replyVoid() { send(.void) }

    func reply(throwing error: any Error) { send(.failure(.init(thrown: error))) }

    private func send(_ outcome: WireEnvelope.Reply.Outcome) {
        association.send(.reply(WireEnvelope.Reply(callID: callID, outcome: outcome)))
    }
}

extension WireEnvelope.RemoteFailure {
    /// A thrown error as it travels: the cluster's own errors keep their meaning.
    init(thrown error: any Error) {
        switch error {
        case ClusterCallError.serialization(let type, let reason):
            self.init(code: .serialization, typeName: type, message: reason)
        case ClusterCallError.invalidInvocation(let why):
            self.init(code: .invalidInvocation, typeName: "", message: why)
        case let error as ExecuteDistributedTargetError:
            self.init(code: .invalidInvocation, typeName: "", message: "\(error)")
        default:
            self.init(code: .thrown, typeName: String(reflecting: type(of: error)), message: "\(error)")
        }
    }
}

extension ClusterSystem {
    /// Decodes an argument or a result with ``ClusterSettings/coder``, which finds this system
    /// under `CodingUserInfoKey.actorSystemKey` (actor references decode through it). The
    /// binary coder's common scalars (`String`, `Int`, `Bool`, `Double`) need no `userInfo`, so
    /// their calls skip making the dictionary.
    func decodeValue<Value: Decodable>(_ type: Value.Type, from bytes: ByteBuffer) throws -> Value {
        guard usesBinaryCoder else {
            return try settings.coder.decode(Value.self, from: bytes, userInfo: [.actorSystemKey: self])
        }
        return try BinaryClusterCoder.decodeScalar(Value.self, from: bytes) {
            try settings.coder.decode(Value.self, from: bytes, userInfo: [.actorSystemKey: self])
        }
    }
}
