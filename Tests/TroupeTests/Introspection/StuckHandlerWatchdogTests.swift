import Logging
import Testing
import Troupe
import TroupeTestSupport

/// The stuck-handler watchdog: a handler that blocks its worker is reported once, counted
/// while it runs, and reported again when it ends.
@Suite struct StuckHandlerWatchdogTests {
    struct Blocker: ActorDefinition {
        enum Message: Sendable {
            case block(Gate)
            case ping(Reply<Int>)
        }
        func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .block(let gate): gate.enter()
            case .ping(let reply): reply.succeed(1)
            }
        }
    }

    static let threshold = Duration.milliseconds(100)

    @Test func aBlockingHandlerIsReportedLoggedCountedAndReportedAgainWhenItEnds() async throws {
        let reports = Recorder<StuckHandler>()
        let logs = Recorder<LogRecord>()
        try await withTestSystem(
            logger: recordingLogger(into: logs, level: .notice),
            introspection: .init(stuckHandlerThreshold: Self.threshold)
        ) { system in
            system.hooks.onStuckHandler { reports.append($0) }
            let blocker = system.spawn(Blocker(), options: SpawnOptions(name: "blocker"))
            let gate = Gate()
            let started = ContinuousClock.now
            blocker.tell(.block(gate))
            await waitUntil { reports.count == 1 }
            let running = try #require(reports.values.first)
            #expect(ContinuousClock.now - started >= Self.threshold, "not before the threshold")
            #expect(running.phase == .running)
            #expect(running.actor == blocker.address)
            #expect(running.messageType.hasSuffix("Blocker.Message"))
            #expect(!running.isSwiftJob)
            #expect(running.elapsed >= Self.threshold)
            #expect((0..<2).contains(running.worker))
            #expect(system.stuckHandlerCount == 1)
            let worker = try #require(system.snapshot().workers.first { $0.index == running.worker })
            #expect(worker.running?.actor == blocker.address)
            #expect((worker.running?.handlerRunningFor ?? .zero) >= Self.threshold)

            let warning = try #require(logs.values.first { $0.level == .warning })
            #expect(warning.metadata["actor"] == "\(blocker.address)")
            #expect(warning.metadata["worker"] == "\(running.worker)")
            #expect(warning.metadata["message_type"] != nil)
            #expect(warning.metadata["elapsed_ms"] != nil)

            // Reported once, not at every look.
            try await Task.sleep(for: Self.threshold * 3)
            #expect(reports.count == 1)

            gate.open()
            await waitUntil { reports.count == 2 }
            let finished = reports.values[1]
            #expect(finished.phase == .finished)
            #expect(finished.actor == blocker.address)
            #expect(finished.elapsed >= Self.threshold * 3, "it ran through the sleep above")
            #expect(system.stuckHandlerCount == 0)
            #expect(logs.values.contains { $0.level == .notice && $0.metadata["actor"] == "\(blocker.address)" })
            #expect(try await blocker.ask { .ping($0) } == 1)
        }
    }

    @Test func manyQuickHandlersAreNeverReported() async throws {
        let reports = Recorder<StuckHandler>()
        // 250 ms: well above a handler's microseconds, and above what the OS takes a worker away
        // for on a loaded 2-core CI machine (a descheduled worker is, to the watchdog, stuck).
        // Under TSan, 3 s: a worker of this suite's run was once taken away for longer than
        // 250 ms (CI rehearsal, 2026-12-01: one run in four).
        let threshold = StressScale.hangGuard(.milliseconds(250))
        try await withTestSystem(introspection: .init(stuckHandlerThreshold: threshold)) { system in
            system.hooks.onStuckHandler { reports.append($0) }
            let counter = system.spawn(Counter())
            // Keeps one worker busy with short handlers for well over the threshold, a batch at
            // a time (an ask after each), so that no backlog outlasts the traffic.
            let deadline = ContinuousClock.now + threshold * 5
            var sent = 0
            while ContinuousClock.now < deadline {
                for _ in 0..<1_000 { counter.tell(.add(1)) }
                sent += 1_000
                #expect(try await counter.ask { .get($0) } == sent)
            }
            let total = try await counter.ask { .get($0) }
            #expect(total == sent)
            #expect(reports.count == 0)
        }
    }

    @Test func aSwiftJobBlockingATroupeExecutorIsReportedAsOne() async throws {
        let reports = Recorder<StuckHandler>()
        try await withTestSystem(introspection: .init(stuckHandlerThreshold: Self.threshold)) { system in
            system.hooks.onStuckHandler { reports.append($0) }
            let gate = Gate()
            let task = Task(executorPreference: system.taskExecutor) { gate.enter() }
            await waitUntil { reports.count == 1 }
            gate.open()
            #expect(await task.value)
            let report = try #require(reports.values.first)
            #expect(report.isSwiftJob)
            #expect(report.messageType == "Swift job")
            await waitUntil { reports.count == 2 }
        }
    }

    @Test func theWatchdogCanBeTurnedOff() async throws {
        let reports = Recorder<StuckHandler>()
        try await withTestSystem(introspection: .init(stuckHandlerThreshold: nil)) { system in
            system.hooks.onStuckHandler { reports.append($0) }
            let blocker = system.spawn(Blocker())
            let gate = Gate()
            blocker.tell(.block(gate))
            await waitUntil { gate.entered == 1 }
            try await Task.sleep(for: .milliseconds(300))
            let snapshot = system.snapshot()
            gate.open()
            #expect(reports.count == 0)
            #expect(system.stuckHandlerCount == 0)
            let worker = try #require(snapshot.workers.first { $0.running != nil })
            #expect(worker.running?.handlerRunningFor == nil, "no watchdog, no running time")
        }
    }

    @Test func anOutOfRangeSamplingIntervalIsRefusedWithWhatToPass() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ActorSystem(configuration: .init(introspection: .init(samplingInterval: -5)))
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("samplingInterval"))
        #expect(text.contains("1_048_576"))
    }

    @Test func aThresholdThatIsNotPositiveIsRefusedWithWhatToPass() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ActorSystem(configuration: .init(introspection: .init(stuckHandlerThreshold: .zero)))
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("stuckHandlerThreshold"))
        #expect(text.contains("nil to turn the watchdog off"))
    }
}
