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

    enum Kind { case throughput, latency, idle, memory }

    var kind: Kind {
        switch self {
        case .pingPongLatency, .askLatency: .latency
        case .idleCPU: .idle
        case .memoryPerIdleActor: .memory
        default: .throughput
        }
    }

    /// What one "msg" of the msgs/s and ns/msg columns is.
    var unit: String {
        switch self {
        case .pingPong, .pingPongLatency: "round trip"
        case .counting, .forkJoinThroughput, .fanIn: "msg"
        case .threadRing: "hop"
        case .chameneos: "meeting"
        case .big: "ping"
        case .forkJoinCreation, .fibonacci, .spawn, .idleCPU, .memoryPerIdleActor: "actor"
        case .askLatency: "ask"
        }
    }

    var unitPlural: String { unit + "s" }

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

    /// Every system name a row uses (for `--filter` validation).
    static let all = [swiftNative, "Swift native (AsyncStream)", "Swift native (async let)", dispatch, troupe,
                      "Troupe (actor producer)", "Troupe (actor ask)", "Troupe (ask from a task)", "Troupe (askBlocking)"]
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
