import InMemoryTracing
import Testing
import Tracing
import Troupe
import TroupeTestSupport
import TroupeTracing

/// A request's ServiceContext follows its messages from actor to actor, with a span per handled
/// message, and nothing is carried (or allocated) where there is no context.
@Suite struct ServiceContextPropagationTests {
    /// Records the trace and span current in its handler, and forwards to a next hop.
    struct Hop: ActorDefinition {
        enum Message: Sendable {
            case visit(Recorder<InMemorySpanContext?>, next: ActorRef<Message>?)
            case traceOf(Reply<InMemorySpanContext?>)
            case askNext(ActorRef<Message>, Recorder<InMemorySpanContext?>)
            case answer(Result<InMemorySpanContext?, AskError>, Recorder<InMemorySpanContext?>)
            case runTask(Recorder<InMemorySpanContext?>)
            case taskDone(Recorder<InMemorySpanContext?>)
        }

        func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .visit(let seen, let next):
                seen.append(ServiceContext.current?.inMemorySpanContext)
                next?.tell(.visit(seen, next: nil))
            case .traceOf(let reply):
                reply.succeed(ServiceContext.current?.inMemorySpanContext)
            case .askNext(let next, let seen):
                seen.append(ServiceContext.current?.inMemorySpanContext)
                context.ask(next, { .traceOf($0) }) { .answer($0, seen) }
            case .answer(let result, let seen):
                seen.append(try? result.get())
                seen.append(ServiceContext.current?.inMemorySpanContext)
            case .runTask(let seen):
                context.run({ ServiceContext.current?.inMemorySpanContext }) { _ in .taskDone(seen) }
            case .taskDone(let seen):
                seen.append(ServiceContext.current?.inMemorySpanContext)
            }
        }
    }

    static func makeSystem(
        _ tracer: InMemoryTracer, spans: ServiceContextPropagation.Spans = .perMessage
    ) -> ActorSystem {
        ActorSystem(
            configuration: .init(
                name: "traced", workerCount: 2, pinWorkers: false, logger: quietLogger,
                contextPropagation: ServiceContextPropagation(spans: spans, tracer: tracer)))
    }

    @Test func aTellCarriesTheTraceAcrossTwoActorsWithASpanPerMessage() async throws {
        let tracer = InMemoryTracer()
        let system = Self.makeSystem(tracer)
        let first = system.spawn(Hop(), options: SpawnOptions(name: "first"))
        let second = system.spawn(Hop(), options: SpawnOptions(name: "second"))
        let seen = Recorder<InMemorySpanContext?>()
        let root = tracer.withSpan("request") { span in
            first.tell(.visit(seen, next: second))
            return span.context.inMemorySpanContext!
        }
        await waitUntil { seen.count == 2 }
        await system.shutdown()
        let contexts = seen.values.compactMap { $0 }
        #expect(contexts.count == 2)
        #expect(contexts.allSatisfy { $0.traceID == root.traceID }, "one trace across both actors")
        #expect(contexts[0].parentSpanID == root.spanID, "the first handler's span is the request's child")
        #expect(contexts[1].parentSpanID == contexts[0].spanID, "the second's is the first handler's child")
        let spans = tracer.finishedSpans.filter { $0.operationName.contains("handles") }
        #expect(spans.count == 2)
        #expect(spans.contains { $0.operationName.hasPrefix("first#") && $0.operationName.hasSuffix("Hop.Message") })
        #expect(spans.allSatisfy { $0.attributes["troupe.actor"] != nil })
    }

    @Test func anAskFromATaskIsHandledInTheTasksTraceAsAServerSpan() async throws {
        let tracer = InMemoryTracer()
        let system = Self.makeSystem(tracer)
        let hop = system.spawn(Hop())
        let (root, seen) = try await tracer.withSpan("request") { span in
            (span.context.inMemorySpanContext!, try await hop.ask { .traceOf($0) })
        }
        await system.shutdown()
        #expect(seen?.traceID == root.traceID)
        #expect(seen?.parentSpanID == root.spanID)
        let span = try #require(tracer.finishedSpans.first { $0.operationName.contains("handles") })
        #expect(span.kind == .server)
    }

    @Test func aNonBlockingAsksReplyAndARunsResultComeBackInTheAskersTrace() async throws {
        let tracer = InMemoryTracer()
        let system = Self.makeSystem(tracer, spans: .none)
        let asker = system.spawn(Hop())
        let answerer = system.spawn(Hop())
        let seen = Recorder<InMemorySpanContext?>()
        let ran = Recorder<InMemorySpanContext?>()
        let root = tracer.withSpan("request") { span in
            asker.tell(.askNext(answerer, seen))
            asker.tell(.runTask(ran))
            return span.context.inMemorySpanContext!
        }
        await waitUntil { seen.count == 3 && ran.count == 1 }
        await system.shutdown()
        // Without spans, the context is restored as it was sent: the request's own span.
        #expect(seen.values.allSatisfy { $0 == root }, "\(seen.values)")
        #expect(ran.values == [root], "the run's result message carries the handler's context")
    }

    @Test func withoutACurrentContextNothingIsCarried() async throws {
        let tracer = InMemoryTracer()
        let system = Self.makeSystem(tracer)
        let hop = system.spawn(Hop())
        let seen = Recorder<InMemorySpanContext?>()
        hop.tell(.visit(seen, next: nil))
        await waitUntil { seen.count == 1 }
        await system.shutdown()
        #expect(seen.values == [nil])
        #expect(tracer.finishedSpans.isEmpty)
    }

    @Test func aSystemWithoutPropagationCarriesNoContext() async throws {
        let tracer = InMemoryTracer()
        try await withTestSystem { system in
            let hop = system.spawn(Hop())
            let seen = Recorder<InMemorySpanContext?>()
            _ = tracer.withSpan("request") { _ in hop.tell(.visit(seen, next: nil)) }
            await waitUntil { seen.count == 1 }
            #expect(seen.values == [nil])
        }
    }

    @Test func deadLetteredAndSampledMessagesReleaseWhatTheyCarry() async throws {
        // A stopped recipient's messages carry contexts too: dead-lettering them must drop the
        // annotation (checked by LeakSanitizer in CI, and here by the context's lifetime).
        let tracer = InMemoryTracer()
        let system = ActorSystem(
            configuration: .init(
                name: "traced", workerCount: 2, pinWorkers: false, logger: quietLogger,
                introspection: .init(samplingInterval: 1),
                contextPropagation: ServiceContextPropagation(spans: .none, tracer: tracer)))
        let hop = system.spawn(Hop())
        let seen = Recorder<InMemorySpanContext?>()
        let root = tracer.withSpan("request") { span in
            for _ in 0..<2_000 { hop.tell(.visit(seen, next: nil)) }
            return span.context.inMemorySpanContext!
        }
        await waitUntil { seen.count == 2_000 }
        #expect(seen.values.allSatisfy { $0 == root }, "sampled messages carry their context too")
        #expect(system.latencyHistograms.handlerDuration.count > 0, "and are still timed")
        hop.stop()
        _ = await hop.terminated()
        tracer.withSpan("late") { _ in
            for _ in 0..<10 { hop.tell(.visit(seen, next: nil)) }
        }
        #expect(system.deadLetters.count(.recipientStopped) == 10)
        await system.shutdown()
    }
}
