// The benchmarked workloads, their units, the systems they run on, and their sizes.

/// The workloads, in report order: the Savina micro suite (Imam & Sarkar, AGERE 2014), CAF's
/// N:1 mailbox test, spawn cost, latency percentiles, then idle cost.
enum Workload: String, CaseIterable, Sendable {
    /// Savina `pingpong`: two actors exchange N request/response pairs.
    case pingPong = "PingPong"
    /// Savina `count`: a producer sends N increments one way to a counter.
    case counting = "Counting"
    /// Savina `threadring`: a token travels N hops around a ring of actors.
    case threadRing = "ThreadRing"
    /// Savina `chameneos`: chameneos meet pairwise through a broker (the mall), M meetings.
    case chameneos = "Chameneos"
    /// Savina `big`: many actors ping random neighbours, each ping answered by a pong.
    case big = "Big"
    /// Savina `fjthrput`: one sender, A actors, N messages each, round robin.
    case forkJoinThroughput = "ForkJoinThroughput"
    /// Savina `fjcreate`: N actors each created, sent one message, and stopped.
    case forkJoinCreation = "ForkJoinCreation"
    /// Savina `fib`: fib(n) by recursive actor creation, children reply to their parent.
    case fibonacci = "Fibonacci"
    /// CAF's N:1 mailbox test: several producers send to one consumer.
    case fanIn = "FanIn"
    /// Spawn an actor and have it handle its first message.
    case spawn = "Spawn"
    /// PingPong round-trip latency percentiles.
    case pingPongLatency = "PingPongLatency"
    /// Ask (request/response from outside the actor) latency percentiles.
    case askLatency = "AskLatency"
    /// Process CPU used while many actors exist and nothing happens.
    case idleCPU = "IdleCPU"
    /// Heap bytes per live, idle actor.
    case memoryPerIdleActor = "MemoryPerIdleActor"
    /// Pool dispatch (issue 4): one thread tells N messages to a pool, one row per routing.
    case pool = "Pool"
    /// Least-loaded balance under skewed work (issue 4): member 0 spins 10× longer per message.
    case poolSkew = "PoolSkew"
    /// TroupePromises (issue 5): create and complete a promise (plus a callback, a map chain).
    case promiseCreate = "PromiseCreate"
    /// TroupePromises (issue 5): ask round trips through a promise vs `try await ask`.
    case promiseAsk = "PromiseAsk"
    /// TroupePubSub (issue 6): one publisher fans out to 1,000 subscribers.
    case pubSubFanOut = "PubSubFanOut"
    /// The cost of restarting an actor (a failing handler, or `requestRestart` from outside),
    /// beside a fresh spawn + stop (what a restart avoids).
    case restart = "Restart"
    /// One `startSingleTimer` + `cancelTimer` pair in a handler, 100,000 timers active.
    case timersArmCancel = "TimersArmCancel"
    /// Lateness of single timers: handled − intended deadline, percentiles.
    case timersLateness = "TimersLateness"
    /// Heap bytes per active (far-future) timer, 100,000 armed.
    case timersMemory = "TimersMemory"
    /// Process CPU while 100,000 timers are armed far in the future and nothing fires.
    case timersIdleCPU = "TimersIdleCPU"

    /// `lateness`: percentiles of how late something happened (no rate: the window is set by
    /// the deadlines, not by the work).
    enum Kind { case throughput, latency, lateness, idle, memory }

    var kind: Kind {
        switch self {
        case .pingPongLatency, .askLatency: .latency
        case .timersLateness: .lateness
        case .idleCPU, .timersIdleCPU: .idle
        case .memoryPerIdleActor, .timersMemory: .memory
        default: .throughput
        }
    }

    /// What one "msg" of the msgs/s and ns/msg columns is.
    var unit: String {
        switch self {
        case .pingPong, .pingPongLatency: "round trip"
        case .counting, .forkJoinThroughput, .fanIn, .pool, .poolSkew: "msg"
        case .promiseCreate: "promise"
        case .promiseAsk: "ask"
        case .pubSubFanOut: "delivery"
        case .threadRing: "hop"
        case .chameneos: "meeting"
        case .big: "ping"
        case .forkJoinCreation, .fibonacci, .spawn, .idleCPU, .memoryPerIdleActor: "actor"
        case .askLatency: "ask"
        case .restart: "restart"
        case .timersArmCancel: "start+cancel"
        case .timersLateness, .timersMemory, .timersIdleCPU: "timer"
        }
    }

    /// Whether a Swift native row is measured, so that the "≥ 1× native" target applies
    /// (pools and promises are Troupe-only: their rows compare routings and forms; restart and
    /// timer rows have their own targets, and their Swift native rows are context, labelled by
    /// form, not a ratio baseline).
    var hasNativeBaseline: Bool {
        switch self {
        case .pool, .poolSkew, .promiseCreate, .promiseAsk: false
        case .restart, .timersArmCancel, .timersLateness, .timersMemory, .timersIdleCPU: false
        default: true
        }
    }

    var unitPlural: String {
        switch self {
        case .pubSubFanOut: "deliveries"
        case .timersArmCancel: "start+cancel pairs"
        default: unit + "s"
        }
    }

    /// Rows the allocation guard skips: idle windows, and timer rows whose length is set by
    /// deadlines or whose set-up dwarfs the count (their allocations per timer are shown in the
    /// table; TimersArmCancel is the guarded timer row).
    var excludedFromAllocationGuard: Bool {
        switch self {
        case .idleCPU, .timersIdleCPU, .timersLateness, .timersMemory: true
        default: false
        }
    }

    /// One-way workloads (the brief's ≥ 20× Swift native target).
    var isOneWay: Bool {
        switch self {
        case .counting, .threadRing, .chameneos, .big: true
        default: false
        }
    }
}

/// System names. Ratios ("× native") divide a row by the row of the same workload whose system
/// is exactly `swiftNative` (the fastest idiomatic native form); targets apply to rows whose
/// system starts with `troupePrefix`.
enum BenchSystem {
    static let swiftNative = "Swift native"
    static let dispatch = "Dispatch"
    static let troupe = "Troupe"
    static let troupePrefix = "Troupe"
    /// The plain Troupe row on a system of its own with introspection off (no sampling, no
    /// watchdog), and on one that times every message (issue 15: the cost of introspection).
    static let troupeIntrospectionOff = "Troupe (introspection off)"
    static let troupeEveryMessageTimed = "Troupe (every message timed)"
    /// PingPong on a system with TroupeTracing's propagation (no spans): first with no context
    /// current, then with one carried by every message.
    static let troupeTracingNoContext = "Troupe (tracing on, no context)"
    static let troupeTracingCarried = "Troupe (tracing on, context carried)"
    /// PingPong with Pong spawned by Ping (`context.spawn`): a family, the parent's ref in every
    /// ping (the plain row's actors are both spawned by the system).
    static let troupeChildPartner = "Troupe (Pong a child of Ping)"
    /// Spawn's form of the native row: one task on the system's task executor spawns an actor
    /// and awaits one answer (the spawn's first turn and the ask run in place), and the same
    /// with direct hand-off off.
    static let troupeSpawnAskFromTask = "Troupe (spawn + ask from a task on its executor)"
    static let troupeSpawnAskFromTaskHandOffOff = "Troupe (spawn + ask from a task on its executor, hand-off off)"
    /// Two native actors on executors of their own threads: an awaited call is a real hand-over.
    static let swiftNativeTwoExecutors = "Swift native (2 executors)"
    /// Native actors on Troupe serial executors (issue 14): on one executor shared by the
    /// actors (no hop, compared with `swiftNative`), and on one each (compared with the
    /// message-passing native row).
    static let nativeOnTroupeOneExecutor = "Swift native on Troupe (1 executor)"
    static let nativeOnTroupeTwoExecutors = "Swift native on Troupe (2 executors)"
    /// The Savina rows' native form with every actor on a Troupe serial executor of its own
    /// and the driving tasks on the system's task executor.
    static let nativeOnTroupeExecutors = "Swift native on Troupe executors"
    /// Where the plain `swiftNative` row passes no message (Swift runs the awaited call on the
    /// caller's thread, without a hop), the native row that does, used as the ratio's baseline.
    static let messagePassingNative: [Workload: String] = [
        .pingPong: swiftNativeTwoExecutors, .counting: "Swift native (AsyncStream)",
    ]

    /// Every system name a row uses (for `--filter` validation).
    static let all =
        [
            swiftNative, swiftNativeTwoExecutors, "Swift native (AsyncStream)", "Swift native (async let)", dispatch,
            nativeOnTroupeOneExecutor, nativeOnTroupeTwoExecutors, nativeOnTroupeExecutors,
            troupe, troupeIntrospectionOff, troupeEveryMessageTimed, troupeTracingNoContext, troupeTracingCarried,
            troupeChildPartner, troupeSpawnAskFromTask, troupeSpawnAskFromTaskHandOffOff, "Troupe (actor producer)",
            "Troupe (actor ask)", "Troupe (ask from a task)",
            "Troupe (ask from a task on its executor)", "Troupe (askBlocking)", "Troupe (actor ask, target busy)",
            "Troupe (actor ask, hand-off off)", "Troupe (ask from a task on its executor, target busy)",
            "Troupe (ask from a task on its executor, hand-off off)",
        ]
        + poolSystems + poolSkewSystems + promiseCreateSystems + promiseAskSystems + restartSystems + timerSystems
        + PeerSystem.all
}

/// Which size column of a workload a row uses.
enum SizeFamily { case troupe, native, dispatch }

/// The sizes of one workload: full run per system family, `--quick`, and `--check-allocations`.
struct SizeSpec: Sendable {
    var troupe: Int
    var native: Int
    var dispatch: Int
    var quick: Int
    /// `--check-allocations` (Troupe rows only).
    var guardSize: Int
    /// The meaning of the size, e.g. "hops" or "n of fib(n)".
    var meaning: String
    /// Secondary rows that run at another size, for the header.
    var secondary: String = ""
}
