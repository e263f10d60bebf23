// Synchronisation helpers shared by the workloads: completion latches with a deadline (a lost
// message fails the run loudly instead of hanging it), blocking bridges to async code, a
// deterministic random generator, and the lazily created Troupe system.

import CBenchSupport
import Dispatch
import Glibc
import Synchronization
import Troupe
import TroupeTracing

/// How long any workload may take before it is declared lost (a dropped message, a deadlock).
let workloadDeadlineSeconds = 180.0

/// Waits on `semaphore` until the workload deadline; exits 1 with `what` when it passes.
func waitOrFail(_ semaphore: DispatchSemaphore, _ what: @autoclosure () -> String) {
    if semaphore.wait(timeout: .now() + workloadDeadlineSeconds) == .timedOut {
        printError(
            "troupe-bench: WRONG RESULT: \(what()) did not finish within \(Int(workloadDeadlineSeconds)) s (lost message or deadlock)"
        )
        exit(1)
    }
}

/// Counts down from `count`; the thread that reaches zero releases the waiter.
final class Latch: Sendable {
    private let remaining: Atomic<Int>
    private let done = DispatchSemaphore(value: 0)

    init(count: Int) {
        precondition(count > 0, "a latch needs a positive count")
        remaining = Atomic(count)
    }

    @inline(__always)
    func countDown() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.signal() }
    }

    /// Blocks until the count reached zero (or fails the run after the deadline).
    func wait(_ what: @autoclosure () -> String) { waitOrFail(done, what()) }

    var count: Int { remaining.load(ordering: .acquiring) }
}

/// A value produced once, on any thread, and waited for by one plain thread.
final class Completion<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init() {}

    func complete(_ result: Value) {
        value.withLock { $0 = result }
        done.signal()
    }

    func wait(_ what: @autoclosure () -> String) -> Value {
        waitOrFail(done, what())
        return value.withLock { $0! }
    }
}

/// An atomic sum that actors add their partial results to.
final class SharedSum: Sendable {
    let value = Atomic<Int>(0)
    func add(_ amount: Int) { value.wrappingAdd(amount, ordering: .relaxed) }
    var total: Int { value.load(ordering: .acquiring) }
}

/// Runs async work to completion from synchronous code (blocks the calling thread).
func runBlocking<T: Sendable>(_ what: String = "async workload", _ body: @escaping @Sendable () async -> T) -> T {
    let completion = Completion<T>()
    Task.detached { completion.complete(await body()) }
    return completion.wait(what)
}

/// As `runBlocking`, with the task preferring `executor` (a Troupe system's task executor).
func runBlocking<T: Sendable>(
    on executor: any TaskExecutor, _ what: String = "async workload", _ body: @escaping @Sendable () async -> T
) -> T {
    let completion = Completion<T>()
    Task.detached(executorPreference: executor) { completion.complete(await body()) }
    return completion.wait(what)
}

/// Starts a plain OS thread (not a Troupe worker, not a Swift task) and returns a join handle.
func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    let result = pthread_create(
        &thread, nil,
        { raw in
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box)
    precondition(result == 0, "pthread_create failed: \(result)")
    return thread
}

func joinThread(_ thread: pthread_t) {
    precondition(pthread_join(thread, nil) == 0, "pthread_join failed")
}

/// xorshift64*: deterministic, allocation-free, good enough to pick targets.
struct FastRandom: Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }

    @inline(__always)
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }

    @inline(__always)
    mutating func next(below bound: Int) -> Int { Int(truncatingIfNeeded: next() % UInt64(bound)) }
}

/// The small, fixed piece of work fork-join workloads do per message (Savina's
/// `performComputation`, reduced to a multiply-add so the messaging dominates). Order-sensitive,
/// so a checksum over a mailbox's messages verifies their order as well as their number.
@inline(__always)
func mix(_ state: Int, _ value: Int) -> Int { state &* 31 &+ value &+ 7 }

/// The Troupe system the Troupe rows share, created on first use (so that baseline rows measured
/// first run without Troupe's threads) and shut down at the end.
/// `TROUPE_BENCH_WORKERS=N` overrides the worker count (default: one per allowed CPU).
final class TroupeHost: Sendable {
    private let created = Mutex<ActorSystem?>(nil)

    var system: ActorSystem {
        created.withLock { system in
            if let system { return system }
            let made = ActorSystem(configuration: TroupeHost.configuration(introspection: .init()))
            system = made
            return made
        }
    }

    /// The bench systems' configuration. `TROUPE_BENCH_WORKERS=N` sets the worker count.
    static func configuration(
        introspection: ActorSystem.Introspection, contextPropagation: (any MessageContextPropagation)? = nil
    ) -> ActorSystem.Configuration {
        let workers = getenv("TROUPE_BENCH_WORKERS").flatMap { Int(String(cString: $0)) }
        var configuration = ActorSystem.Configuration(
            name: "bench", workerCount: workers, introspection: introspection, contextPropagation: contextPropagation)
        // The Restart rows fail handlers on purpose, and the runtime logs a warning per
        // failure ("…; restarting") through the default stderr handler: one line per unit.
        // Warnings are filtered here (the level check stays in the measured cost; a logging
        // backend's does not); errors still print.
        configuration.logger.logLevel = .error
        return configuration
    }

    /// A plain Troupe row's system: the shared one, or one of its own with other settings
    /// (issue 15: what introspection and tracing cost per message).
    struct RowVariant: Sendable {
        let system: String
        /// `nil`: the shared system.
        let introspection: ActorSystem.Introspection?
        let tracing: Bool
        /// Whether the row's first message is sent with a ServiceContext current, so that every
        /// message of the row carries it.
        let carriesContext: Bool
        let note: String
    }

    /// The plain Troupe rows of Counting and PingPong, and their variants: the shared system
    /// (default introspection: one message in 1,024 timed, the watchdog on), a system with
    /// introspection off, and one that times every message.
    static let introspectionVariants: [RowVariant] = [
        RowVariant(system: BenchSystem.troupe, introspection: nil, tracing: false, carriesContext: false, note: ""),
        RowVariant(
            system: BenchSystem.troupeIntrospectionOff, introspection: .off, tracing: false, carriesContext: false,
            note: "introspection off (the shared system still has the process stamp 1 envelope in 1,024)"),
        RowVariant(
            system: BenchSystem.troupeEveryMessageTimed, introspection: .init(samplingInterval: 1), tracing: false,
            carriesContext: false, note: "every message timed (time in mailbox and handler duration)"),
    ]

    /// PingPong's variants: the introspection ones, and TroupeTracing's propagation (no spans)
    /// without and with a context carried by every message.
    static let pingPongVariants: [RowVariant] =
        introspectionVariants + [
            RowVariant(
                system: BenchSystem.troupeTracingNoContext, introspection: .init(), tracing: true,
                carriesContext: false,
                note: "ServiceContextPropagation(spans: .none), no context current: every send takes the slow path"),
            RowVariant(
                system: BenchSystem.troupeTracingCarried, introspection: .init(), tracing: true, carriesContext: true,
                note: "ServiceContextPropagation(spans: .none), a ServiceContext carried by every message"),
        ]

    /// Runs `body` on the variant's system (the shared one, or one of its own shut down
    /// afterwards); `body` gets the system and a note on it.
    func withRowSystem<Result>(_ variant: RowVariant, _ body: (ActorSystem, String) -> Result) -> Result {
        guard let introspection = variant.introspection else { return body(system, workersNote) }
        let own = ActorSystem(
            configuration: TroupeHost.configuration(
                introspection: introspection,
                contextPropagation: variant.tracing ? ServiceContextPropagation(spans: .none) : nil))
        defer { own.shutdownBlocking() }
        return body(own, "\(own.workerCount) pinned workers, a system of its own: \(variant.note)")
    }

    /// Runs `body` on a system of its own without direct hand-off (the "hand-off off" rows),
    /// shut down afterwards.
    static func withoutHandOff<Result>(_ body: (ActorSystem) -> Result) -> Result {
        var configuration = TroupeHost.configuration(introspection: .init())
        configuration.directHandOff = false
        let own = ActorSystem(configuration: configuration)
        defer { own.shutdownBlocking() }
        return body(own)
    }

    /// "2 pinned workers", for notes.
    var workersNote: String { "\(system.workerCount) pinned workers" }

    /// Waits until every actor of the previous run has stopped, so that its teardown (stop
    /// messages, deallocation) does not run into the next row's window. Fails the run when
    /// actors are still alive after the deadline (a row that forgot to stop them, or a lost stop).
    func settle(_ what: @autoclosure () -> String) {
        guard let system = created.withLock({ $0 }) else { return }
        var waited = 0.0
        while system.liveActorCount > 0 {
            sleepSeconds(0.001)
            waited += 0.001
            if waited > 60 {
                printError(
                    "troupe-bench: WRONG RESULT: \(what()): \(system.liveActorCount) actors still alive 60 s after the run"
                )
                exit(1)
            }
        }
    }

    func shutdown() {
        let system = created.withLock { $0 }
        system?.shutdownBlocking()
    }
}

let troupe = TroupeHost()
