import Foundation
import Metrics
import MetricsTestKit
import Testing
import Troupe
import TroupeMetrics
import TroupeTestSupport

/// TroupeMetrics reports hooks, polled gauges and sampled timers to a swift-metrics factory.
@Suite struct TroupeMetricsTests {
    struct Failing: Error {}

    struct Worker: ActorDefinition {
        enum Message: Sendable {
            case work
            case fail
            case ping(Reply<Int>)
            case block(Gate)
        }
        func receive(_ message: Message, context: ActorContext<Message>) throws {
            switch message {
            case .work: break
            case .fail: throw Failing()
            case .ping(let reply): reply.succeed(1)
            case .block(let gate): gate.enter()
            }
        }
    }

    @Test func countsLifecycleEventsWithTheActorsNameAsADimension() async throws {
        let metrics = TestMetrics()
        try await withTestSystem(name: "shop", failureDecider: { _ in .restart }) { system in
            let reporter = TroupeMetrics(system: system, dimensions: [("host", "a")], factory: metrics)
            let named = system.spawn(options: SpawnOptions(name: "cart")) { Worker() }
            let unnamed = system.spawn(Worker())
            #expect(try await named.ask { .ping($0) } == 1)
            #expect(try await unnamed.ask { .ping($0) } == 1)
            named.tell(.fail)
            #expect(try await named.ask { .ping($0) } == 1)
            unnamed.stop()
            _ = await unnamed.terminated()
            let base = [("system", "shop"), ("host", "a")]
            let started = try metrics.expectCounter(TroupeMetrics.Name.actorsStarted, base + [("actor", "cart")])
            #expect(started.totalValue == 1)
            #expect(
                try metrics.expectCounter(TroupeMetrics.Name.actorsStarted, base).totalValue == 1,
                "unnamed: no actor dimension")
            let failures = try metrics.expectCounter(
                TroupeMetrics.Name.actorFailures, base + [("actor", "cart"), ("directive", "restart")])
            #expect(failures.totalValue == 1)
            #expect(
                try metrics.expectCounter(TroupeMetrics.Name.actorRestarts, base + [("actor", "cart")]).totalValue == 1)
            await waitUntil { (try? metrics.expectCounter(TroupeMetrics.Name.actorsStopped, base).totalValue) == 1 }
            reporter.stop()
        }
    }

    @Test func pollsGaugesAndDeadLettersByReason() async throws {
        let metrics = TestMetrics()
        try await withTestSystem(name: "poll", introspection: .init(tracksMailboxDepths: true)) { system in
            let reporter = TroupeMetrics(system: system, pollInterval: .seconds(3600), factory: metrics)
            let worker = system.spawn(Worker(), options: SpawnOptions(name: "queue"))
            let gate = Gate()
            worker.tell(.block(gate))
            await waitUntil { gate.entered == 1 }
            for _ in 0..<7 { worker.tell(.work) }
            let stopped = system.spawn(Worker())
            stopped.stop()
            _ = await stopped.terminated()
            stopped.tell(.work)
            stopped.tell(.work)
            // Messages to a stopped actor are dead-lettered by a turn of its own, on the other
            // worker: wait for both, then for that worker to finish the turn (CI saw 2 busy, and
            // once a poll that came before the turn).
            await waitUntil("both late messages dead-lettered") { system.deadLetters.count(.recipientStopped) == 2 }
            await waitUntil("only the blocked worker busy") { system.busyWorkerCount == 1 }
            reporter.poll(system)
            let dims = [("system", "poll")]
            #expect(try metrics.expectGauge(TroupeMetrics.Name.liveActors, dims).lastValue == 1)
            #expect(try metrics.expectGauge(TroupeMetrics.Name.busyWorkers, dims).lastValue == 1)
            #expect(
                try metrics.expectGauge(TroupeMetrics.Name.mailboxDepth, dims + [("actor", "queue")]).lastValue == 7)
            let deadLetters = try metrics.expectCounter(
                TroupeMetrics.Name.deadLetters, dims + [("reason", "recipientStopped")])
            #expect(deadLetters.totalValue == 2)
            reporter.poll(system)
            #expect(deadLetters.totalValue == 2, "a poll reports only what is new")
            gate.open()
            #expect(try await worker.ask { .ping($0) } == 1)
            reporter.poll(system)
            #expect(
                try metrics.expectGauge(TroupeMetrics.Name.mailboxDepth, dims + [("actor", "queue")]).lastValue == 0)
            reporter.stop()
        }
    }

    /// A poll reports every dead letter counted before it began, even while another poll runs
    /// beside it (the periodic task's; here a thread polling in a loop): each poll takes the
    /// counts and reports them under one lock. Before, a rival poll could have taken the new
    /// counts and not yet reported them when this one returned (the ASan stage saw the series
    /// missing once, 2026-11-27).
    @Test func aPollBesideAnotherReportsEverythingCountedBeforeIt() async throws {
        let metrics = TestMetrics()
        try await withTestSystem(name: "racing") { system in
            let reporter = TroupeMetrics(system: system, pollInterval: .seconds(3600), factory: metrics)
            let stopped = system.spawn(Worker())
            stopped.stop()
            _ = await stopped.terminated()
            let (finish, finished) = (AtomicCounter(), AtomicCounter())
            // A thread, not a task: a loop that never suspends would hold one of the two threads
            // of Swift's cooperative pool, which the other suites share.
            Thread {
                while finish.value == 0 { reporter.poll(system) }
                finished.increment()
            }.start()
            let dims = [("system", "racing"), ("reason", "recipientStopped")]
            var shortfalls = 0
            for _ in 0..<2_000 {
                stopped.tell(.work)
                let counted = system.deadLetters.count(.recipientStopped)
                reporter.poll(system)
                let reported = (try? metrics.expectCounter(TroupeMetrics.Name.deadLetters, dims).totalValue) ?? 0
                if reported < Int64(counted) { shortfalls += 1 }
            }
            finish.increment()
            await waitUntil("the rival poller stopped") { finished.value == 1 }
            #expect(shortfalls == 0, "polls that returned before the dead letters counted before them were reported")
            reporter.stop()
        }
    }

    @Test func reportsSnapshotSectionsAsGaugesAndSummaries() async throws {
        let metrics = TestMetrics()
        try await withTestSystem(name: "sections") { system in
            let reporter = TroupeMetrics(system: system, pollInterval: .seconds(3600), factory: metrics)
            let latency = LatencyRecorder()
            for microseconds in 1...100 { latency.record(.microseconds(microseconds)) }
            system.provideSnapshotSection(key: "queue") {
                SnapshotSection(
                    kind: "queue", instance: "orders", values: [.init("waiting", 42)],
                    histograms: [.init("wait", latency.histogram)])
            }
            reporter.poll(system)
            let dims = [("system", "sections"), ("instance", "orders")]
            #expect(try metrics.expectGauge("troupe_queue_waiting", dims).lastValue == 42)
            let median = try #require(
                try metrics.expectGauge("troupe_queue_wait_seconds", dims + [("quantile", "0.5")]).lastValue)
            #expect(abs(median - 50e-6) <= 50e-6 * 0.125, "the median within its bucket: \(median)")
            #expect(
                try metrics.expectGauge("troupe_queue_wait_seconds", dims + [("quantile", "1")]).lastValue == 100e-6)
            #expect(try metrics.expectGauge("troupe_queue_wait_seconds_count", dims).lastValue == 100)
            let sum = try #require(try metrics.expectGauge("troupe_queue_wait_seconds_sum", dims).lastValue)
            #expect(abs(sum - 5_050e-6) < 1e-9)
            reporter.stop()
        }
    }

    @Test func recordsSampledTimesAsTimers() async throws {
        let metrics = TestMetrics()
        try await withTestSystem(name: "timed", introspection: .init(samplingInterval: 1)) { system in
            let reporter = TroupeMetrics(system: system, factory: metrics)
            let worker = system.spawn(Worker(), options: SpawnOptions(name: "w"))
            for _ in 0..<2_000 { worker.tell(.work) }
            #expect(try await worker.ask { .ping($0) } == 1)
            let dims = [("system", "timed"), ("actor", "w")]
            let waited = try metrics.expectTimer(TroupeMetrics.Name.timeInMailbox, dims)
            let ran = try metrics.expectTimer(TroupeMetrics.Name.handlerDuration, dims)
            #expect(waited.values.count >= 2_001 - 1_024, "the sender notices interval 1 within 1,024 sends")
            // The ping's handler answers before it ends, so its timings may still be on their
            // way: stop the actor and wait for its end, after which every handler's timings are
            // recorded (the turn records them right after each handler, before the stop).
            worker.stop()
            _ = await worker.terminated()
            #expect(ran.values.count == waited.values.count)
            #expect(ran.values.allSatisfy { $0 >= 0 && $0 < 10_000_000_000 })
            reporter.stop()
        }
    }

    @Test func stuckHandlersAreAGauge() async throws {
        let metrics = TestMetrics()
        try await withTestSystem(
            name: "stuck", introspection: .init(stuckHandlerThreshold: .milliseconds(50))
        ) { system in
            let reporter = TroupeMetrics(system: system, pollInterval: .seconds(3600), factory: metrics)
            let worker = system.spawn(Worker())
            let gate = Gate()
            worker.tell(.block(gate))
            let gauge = { try? metrics.expectGauge(TroupeMetrics.Name.stuckHandlers, [("system", "stuck")]).lastValue }
            await waitUntil { gauge() == 1 }
            gate.open()
            await waitUntil { gauge() == 0 }
            reporter.stop()
        }
    }
}
