import Troupe

/// A failed expectation of a scenario: throw it (or any error) from `explore`'s scenario.
public struct ScenarioFailure: Error, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Fails the scenario unless `condition` holds.
public func require(
    _ condition: Bool, _ message: @autoclosure () -> String = "requirement failed", file: StaticString = #fileID,
    line: UInt = #line
) throws(ScenarioFailure) {
    if !condition { throw ScenarioFailure("\(message()) (\(file):\(line))") }
}

/// What ``explore(seeds:configuration:_:)`` found.
public struct Exploration: Sendable, CustomStringConvertible {
    /// The first schedule whose scenario threw.
    public struct Failure: Sendable {
        public let seed: UInt64
        /// What the scenario threw (its description).
        public let error: String
        /// The steps that schedule ran.
        public let trace: [ManualDriver.Step]
    }

    /// Schedules run (up to and including the failing one).
    public let schedulesRun: Int
    /// nil when every schedule passed.
    public let failure: Failure?

    public var description: String {
        guard let failure else { return "all \(schedulesRun) schedules passed" }
        return
            "seed \(failure.seed) failed (schedule \(schedulesRun), \(failure.trace.count) steps): \(failure.error). Replay it with DeterministicSystem(seed: \(failure.seed))"
    }
}

/// Runs `scenario` once per seed, each on a fresh ``DeterministicSystem`` scheduled by that
/// seed (and shut down afterwards), and stops at the first seed whose scenario throws: an
/// order-dependent bug is found by trying schedules, and replayed with its seed.
///
/// ```swift
/// let found = explore(seeds: 0..<1_000) { system in
///     let account = system.spawn(Account(balance: 100))
///     ... // two actors withdraw 80 each
///     system.runUntilIdle()
///     try require(try system.ask(account) { .balance($0) } >= 0, "overdrawn")
/// }
/// #expect(found.failure == nil, "\(found)")
/// ```
public func explore(
    seeds: some Sequence<UInt64>, configuration: ActorSystem.Configuration? = nil,
    _ scenario: (DeterministicSystem) throws -> Void
) -> Exploration {
    var run = 0
    for seed in seeds {
        run += 1
        let system = DeterministicSystem(seed: seed, configuration: configuration)
        do {
            try scenario(system)
            system.shutdown()
        } catch {
            let trace = system.trace
            system.shutdown()
            return Exploration(
                schedulesRun: run, failure: .init(seed: seed, error: "\(error)", trace: trace))
        }
    }
    return Exploration(schedulesRun: run, failure: nil)
}
