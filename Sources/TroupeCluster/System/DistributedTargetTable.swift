import Distributed
internal import TroupeLocks

/// What the Swift runtime needs to call one non-generic distributed method, found once and kept
/// for every later call: its mangled name (as the stable bytes the runtime reads), its
/// parameter types, and how to hand its result to a ``ClusterResultHandler``.
///
/// `executeDistributedTarget` demangles the target's name three times on every call (parameter
/// count, parameter types, return type): on this VM that was a fifth of the receiving event
/// loop's time at 64 calls in flight. A resolved target is immutable after `init` and shared by
/// every call to it, on any thread.
final class ResolvedTarget: @unchecked Sendable {  // immutable after init; the buffers are only read
    let name: UnsafeBufferPointer<UInt8>
    /// The parameter types, in order (the runtime reads them; never empty storage).
    let argumentTypes: UnsafeRawPointer
    let result: ResultKind
    /// Where a `Void` target "writes" its result (nothing is written; the runtime wants a pointer).
    let voidResult: UnsafeMutableRawPointer

    /// How a call's result reaches the handler.
    enum ResultKind {
        case void
        /// Allocates a result buffer, runs the call into it, moves the value out to the handler.
        case value(any ResultPassing.Type)
    }

    fileprivate init(name: [UInt8], argumentTypes: [any Any.Type], result: ResultKind) {
        // Safety: each block is owned by this object and freed once in `deinit`; the name and the
        // types (trivial values) are fully initialised here and only read afterwards, on any thread.
        let nameStorage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: name.count)
        _ = nameStorage.initialize(from: name)
        self.name = UnsafeBufferPointer(nameStorage)
        let typeStorage = UnsafeMutablePointer<any Any.Type>.allocate(capacity: max(argumentTypes.count, 1))
        typeStorage.initialize(from: argumentTypes, count: argumentTypes.count)
        self.argumentTypes = UnsafeRawPointer(typeStorage)
        self.result = result
        // Safety: a `Void` target writes nothing into its result buffer, so every call may share this
        // one (16 bytes at 16-byte alignment, as an empty result's place).
        voidResult = .allocate(byteCount: 16, alignment: 16)
    }

    deinit {
        // Safety: the last reference is gone, so no call runs with these any more; the contents are
        // trivial (bytes, metatypes), so freeing needs no deinitialisation.
        UnsafeMutableBufferPointer(mutating: name).deallocate()
        UnsafeMutableRawPointer(mutating: argumentTypes).deallocate()
        voidResult.deallocate()
    }

    /// Runs the target on `actor` and hands its outcome to `handler` (a thrown error, or one
    /// from decoding the arguments, is sent as the failure), as `executeDistributedTarget` does.
    func execute(
        on actor: any DistributedActor, decoder: inout ClusterInvocationDecoder, handler: ClusterResultHandler
    ) async {
        do {
            switch result {
            case .void:
                // Safety: a `Void` target writes no bytes into `voidResult`, so concurrent calls may share it.
                try await run(on: actor, decoder: &decoder, into: voidResult)
                handler.replyVoid()
            case .value(let passing):
                // Safety: `allocate` makes room for one `Value`, the target's exact result type; the call
                // initialises it only when it returns, so `deliver` moves it out and `discard` frees it unread.
                let buffer = passing.allocate()
                do {
                    try await run(on: actor, decoder: &decoder, into: buffer)
                } catch {
                    passing.discard(buffer)
                    throw error
                }
                passing.deliver(buffer, to: handler)
            }
        } catch {
            handler.reply(throwing: error)
        }
    }

    private func run(
        on actor: any DistributedActor, decoder: inout ClusterInvocationDecoder, into buffer: UnsafeMutableRawPointer
    ) async throws {
        // Safety: the declaration below is the runtime's own; `name` is non-empty (`resolve` refuses an
        // empty one), and `self` keeps the name, the types and the result buffer allocated for the call.
        try await _troupeExecuteDistributedTarget(
            on: actor, name.baseAddress!, UInt(name.count), argumentDecoder: &decoder,
            argumentTypes: argumentTypes, resultBuffer: UnsafeRawPointer(buffer),
            substitutions: nil, witnessTables: nil, numWitnessTables: 0)
    }
}

/// The typed steps for one `Codable` result type, opened once from the runtime's metatype.
protocol ResultPassing {
    static func allocate() -> UnsafeMutableRawPointer
    /// Moves the initialized value out of the buffer to the handler, then frees the buffer.
    static func deliver(_ buffer: UnsafeMutableRawPointer, to handler: ClusterResultHandler)
    /// Frees a buffer the call never initialized (the target threw).
    static func discard(_ buffer: UnsafeMutableRawPointer)
}

enum TypedResultPassing<Value: Codable>: ResultPassing {
    static func allocate() -> UnsafeMutableRawPointer {
        // Safety: one uninitialised `Value`, freed by `deliver` (after the move) or `discard`.
        UnsafeMutableRawPointer(UnsafeMutablePointer<Value>.allocate(capacity: 1))
    }

    static func deliver(_ buffer: UnsafeMutableRawPointer, to handler: ClusterResultHandler) {
        // Safety: the target returned, so the runtime initialised the `Value` here; it is moved out once
        // and the block freed once.
        let typed = buffer.assumingMemoryBound(to: Value.self)
        let value = typed.move()
        typed.deallocate()
        handler.reply(with: value)
    }

    static func discard(_ buffer: UnsafeMutableRawPointer) {
        // Safety: the target threw, so nothing was written; the block is freed without deinitialising.
        buffer.assumingMemoryBound(to: Value.self).deallocate()
    }
}

/// The passing steps for a metatype the runtime found to be `Codable`.
private func resultPassing<Value: Codable>(_: Value.Type) -> any ResultPassing.Type {
    TypedResultPassing<Value>.self
}

/// Resolved targets by mangled name, per cluster system. Any thread.
///
/// Only names the runtime resolves to a non-generic method with `Codable` results are kept, and
/// at most ``capacity`` of them (a program has that many distributed methods at most in
/// practice; a peer sending made-up names cannot grow the table past it). Generic targets and
/// anything unusual take the standard library's `executeDistributedTarget`.
struct DistributedTargetTable: Sendable {
    static let capacity = 4096

    enum Lookup {
        case resolved(ResolvedTarget)
        /// Use `executeDistributedTarget` (generic, unknown, or malformed target).
        case standard
    }

    private let table = Locked<[String: ResolvedTarget]>([:])

    /// How many targets are kept.
    var resolvedCount: Int { table.withLock { $0.count } }

    /// Whether this build calls the runtime's entry point directly (see
    /// `_troupeExecuteDistributedTarget`): only with the compilers whose entry point was checked
    /// (Swift 6.0–6.3: `RemoteCallTests` run every resolved path against the standard one). A
    /// newer compiler takes the public `executeDistributedTarget` for every call (slower, never
    /// wrong) until the tests pass on it and this bound is raised; `RemoteCallTests` fails on
    /// such a toolchain to say so.
    #if compiler(>=6.0) && !compiler(>=6.4)
        static let callsRuntimeEntryPoint = true
    #else
        static let callsRuntimeEntryPoint = false
    #endif

    func lookup(_ identifier: String) -> Lookup {
        guard Self.callsRuntimeEntryPoint else { return .standard }
        if let target = table.withLock({ $0[identifier] }) { return .resolved(target) }
        guard let target = Self.resolve(identifier) else { return .standard }
        table.withLock { table in
            if table.count < Self.capacity { table[identifier] = target }
        }
        return .resolved(target)
    }

    /// Asks the runtime about a target, as `executeDistributedTarget` does on every call.
    private static func resolve(_ identifier: String) -> ResolvedTarget? {
        let name = Array(identifier.utf8)
        guard !name.isEmpty else { return nil }
        // Safety: `name` is non-empty (checked above), so its base address exists; the pointer is used
        // only inside the closure, and the runtime only reads `length` bytes of it.
        return name.withUnsafeBufferPointer { bytes -> ResolvedTarget? in
            let start = bytes.baseAddress!
            let length = UInt(bytes.count)
            // A generic target's types depend on each call's substitutions.
            guard _getGenericEnvironmentOfDistributedTarget(start, length) == nil else { return nil }
            let count = __getParameterCount(start, length)
            guard count >= 0 else { return nil }
            // Safety: room for `count` metatypes, freed by the `defer`; they are read only when the runtime
            // wrote all of them (`decoded == count`), and metatypes need no deinitialisation.
            let types = UnsafeMutableBufferPointer<any Any.Type>.allocate(capacity: max(Int(count), 1))
            defer { types.deallocate() }
            let decoded = __getParameterTypeInfo(
                start, length, nil, nil, UnsafeMutableRawPointer(types.baseAddress!)._rawValue, Int(count))
            guard decoded == count else { return nil }
            let argumentTypes = Array(types.prefix(Int(count)))
            guard let returnType = __getReturnTypeInfo(start, length, nil, nil) else { return nil }
            let result: ResolvedTarget.ResultKind
            if returnType == Void.self {
                result = .void
            } else if let codable = returnType as? any Codable.Type {
                result = .value(resultPassing(codable))
            } else {
                return nil
            }
            return ResolvedTarget(name: name, argumentTypes: argumentTypes, result: result)
        }
    }
}

// Safety: the standard library's own declaration of this entry point (`_executeDistributedTarget`
// in Distributed), called only with the compilers `callsRuntimeEntryPoint` was checked against.
/// The Swift runtime's entry point behind `executeDistributedTarget` (exported by
/// `libswiftDistributed` since Swift 5.7; the compiler calls it with the same special async
/// convention as the standard library does): finds the target's accessor by name, which
/// decodes each argument through `argumentDecoder` (of the actor system's decoder type) and
/// writes the result into `resultBuffer`.
@_silgen_name("swift_distributed_execute_target")
func _troupeExecuteDistributedTarget<Decoder: DistributedTargetInvocationDecoder>(
    on actor: AnyObject,
    _ targetName: UnsafePointer<UInt8>, _ targetNameLength: UInt,
    argumentDecoder: inout Decoder,
    argumentTypes: UnsafeRawPointer,
    resultBuffer: UnsafeRawPointer,
    substitutions: UnsafeRawPointer?,
    witnessTables: UnsafeRawPointer?,
    numWitnessTables: UInt
) async throws
