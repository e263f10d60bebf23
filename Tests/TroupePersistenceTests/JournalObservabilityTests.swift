import Testing
import Troupe
import TroupePersistence
import TroupeTestSupport

/// A journal's latencies and counters, in `statistics` and in `system.snapshot()`.
@Suite struct JournalObservabilityTests {
    @Test func writesCommitsAndRecoveriesAreTimedAndShownInTheSnapshot() async throws {
        let journal = Journal(store: InMemoryStore())
        let system = makeTestSystem()
        #expect(system.snapshot().sections.isEmpty)
        let account = system.spawn(persistent: Account(persistenceID: "observed"), journal: journal)
        for amount in 1...20 { _ = try await account.ask(timeout: .seconds(10)) { .deposit(amount, $0) } }
        let statistics = journal.statistics
        // The claim and the 20 appends, each timed from submit to outcome.
        #expect(statistics.operations == 21)
        #expect(statistics.writeLatency.count == 21)
        #expect(statistics.commitDuration.count == UInt64(statistics.batches))
        #expect(statistics.recoveryLatency.count == 1)
        #expect(statistics.queuedOperations == 0)
        #expect(statistics.writeLatency.maximum >= statistics.writeLatency.percentile(0.5))

        let sections = system.snapshot().sections.filter { $0.kind == "journal" }
        #expect(sections.count == 1)
        let section = try #require(sections.first)
        #expect(section.instance.hasPrefix("InMemoryStore #"))
        let values = Dictionary(uniqueKeysWithValues: section.values.map { ($0.name, $0.value) })
        #expect(values["operations"] == 21)
        #expect(values["events"] == 20)
        #expect(values["queued_operations"] == 0)
        #expect(section.histograms.map(\.name) == ["write_latency", "commit_duration", "recovery_latency"])
        #expect(section.histograms[0].histogram.count == 21)
        #expect(system.snapshot().description.contains("journal InMemoryStore #"))

        // A second actor on the same journal does not add a second section.
        let other = system.spawn(persistent: Account(persistenceID: "other"), journal: journal)
        _ = try await other.ask(timeout: .seconds(10)) { .deposit(1, $0) }
        #expect(system.snapshot().sections.filter { $0.kind == "journal" }.count == 1)
        await system.shutdown()
        await journal.shutdown()
    }

    /// `Journal.lag(in:)`: the journals a system's durable actors use, over all of them, and
    /// nothing for a system that uses none.
    @Test func aSystemsJournalLagCoversTheJournalsItsDurableActorsUse() async throws {
        let (first, second) = (Journal(store: InMemoryStore()), Journal(store: InMemoryStore()))
        let (system, bystander) = (makeTestSystem(), makeTestSystem())
        #expect(Journal.lag(in: system) == nil, "no durable actor yet")
        let account = system.spawn(persistent: Account(persistenceID: "lagging-1"), journal: first)
        for amount in 1...5 { _ = try await account.ask(timeout: .seconds(10)) { .deposit(amount, $0) } }
        var lag = try #require(Journal.lag(in: system))
        #expect(lag.journals == 1 && lag.operations == 6 && lag.queuedOperations == 0)
        let p99 = try #require(lag.writeLatencyP99)
        #expect(p99 > .zero && p99 <= first.statistics.writeLatency.maximum)

        let other = system.spawn(persistent: Account(persistenceID: "lagging-2"), journal: second)
        _ = try await other.ask(timeout: .seconds(10)) { .deposit(1, $0) }
        lag = try #require(Journal.lag(in: system))
        #expect(lag.journals == 2 && lag.operations == 8, "\(lag)")
        #expect(
            Set(Journal.journals(in: system).map(ObjectIdentifier.init)) == [
                ObjectIdentifier(first), ObjectIdentifier(second),
            ])
        #expect(Journal.lag(in: bystander) == nil, "another system's journals are not this one's")
        #expect(lag.description.hasPrefix("2 journals: 0 queued, 8 operations, write p99 "))
        let slowest = try #require(lag.writeLatencyP99)
        #expect(lag.description.hasSuffix("p99 \(LatencyHistogram.format(slowest))"), "\(lag)")
        let slow = JournalLag(journals: 1, queuedOperations: 3, operations: 9, writeLatencyP99: .microseconds(3_407))
        #expect(slow.description == "1 journal: 3 queued, 9 operations, write p99 3.41 ms")
        let fast = JournalLag(journals: 1, queuedOperations: 0, operations: 1, writeLatencyP99: .nanoseconds(395_777))
        #expect(fast.description == "1 journal: 0 queued, 1 operations, write p99 396 µs")
        #expect(
            JournalLag(journals: 0, queuedOperations: 0, operations: 0, writeLatencyP99: nil).description
                == "0 journals: 0 queued, 0 operations, write p99 none yet")
        await system.shutdown()
        await bystander.shutdown()
        await first.shutdown()
        await second.shutdown()
    }
}
