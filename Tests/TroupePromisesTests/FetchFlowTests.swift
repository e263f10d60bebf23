import Synchronization
import Testing
import Troupe
import TroupePromises
import TroupeTestSupport

enum StoreError: Error, Equatable { case missing(String), saveRefused }
enum SourceError: Error, Equatable { case offline }

/// An in-memory persistence actor.
struct MemoryStore: ActorDefinition {
    enum Message: Sendable {
        case load(String, Reply<String>)
        case save(String, String, Reply<String>)
        case refuseSaves(Bool)
        case contents(Reply<[String: String]>)
    }
    var items: [String: String] = [:]
    var refusing = false

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .load(let key, let reply):
            if let value = items[key] { reply.succeed(value) } else { reply.fail(StoreError.missing(key)) }
        case .save(let key, let value, let reply):
            if refusing { reply.fail(StoreError.saveRefused); return }
            items[key] = value
            reply.succeed(value)
        case .refuseSaves(let refuse): refusing = refuse
        case .contents(let reply): reply.succeed(items)
        }
    }
}

/// A source whose next `failures` fetches fail.
struct FlakySource: ActorDefinition {
    enum Message: Sendable { case fetch(String, Reply<String>), fail(next: Int), calls(Reply<Int>) }
    var failures = 0
    var calls = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .fetch(let key, let reply):
            calls += 1
            if failures > 0 { failures -= 1; reply.fail(SourceError.offline) } else { reply.succeed("fresh-\(key)") }
        case .fail(let next): failures = next
        case .calls(let reply): reply.succeed(calls)
        }
    }
}

func unwrap(_ error: (any Error)?) -> (any Error)? {
    if case .failed(let inner)? = error as? AskError { return inner }
    return error
}

@Suite struct FetchFlowTests {
    func makeFlow(
        _ system: ActorSystem
    ) -> (FetchFlow<String, String>, ActorRef<MemoryStore.Message>, ActorRef<FlakySource.Message>) {
        let store = system.spawn(MemoryStore())
        let source = system.spawn(FlakySource())
        let flow = FetchFlow<String, String>(
            loadFromPersistence: { key in store.askPromise { .load(key, $0) } },
            source: { key in source.askPromise { .fetch(key, $0) } },
            saveToPersistence: { key, value in store.askPromise { .save(key, value, $0) } })
        return (flow, store, source)
    }

    @Test func fetchMissesLoadsFromSourceAndSavesThenHitsPersistence() async throws {
        try await withTestSystem { system in
            var (flow, store, source) = makeFlow(system)
            let loadFailures = Calls<String>()
            flow.observeLoadFailure { key, error in
                loadFailures.record("\(key): \(unwrap(error) as? StoreError == .missing(key))")
            }
            let got6 = try await flow.fetch("ada").get()
            #expect(got6 == "fresh-ada")
            #expect(loadFailures.all == ["ada: true"])
            let got7 = try await store.ask { .contents($0) }
            #expect(got7 == ["ada": "fresh-ada"])
            let got8 = try await flow.fetch("ada").get()
            #expect(got8 == "fresh-ada")
            let got9 = try await source.ask { .calls($0) }
            #expect(got9 == 1)  // second fetch came from the store
            #expect(loadFailures.count == 1)
        }
    }

    @Test func sourceFailureSkipsSaveAndFailsFetch() async throws {
        try await withTestSystem { system in
            var (flow, store, source) = makeFlow(system)
            let events = Calls<String>()
            flow.observe { event in
                switch event {
                case .started(let step, _): events.record("start \(step.rawValue)")
                case .succeeded(let step, _, _): events.record("ok \(step.rawValue)")
                case .failed(let step, _, _): events.record("fail \(step.rawValue)")
                }
            }
            source.tell(.fail(next: 1))
            let outcome = await flow.fetch("bob").outcome
            #expect(unwrap(outcome.failure) as? SourceError == .offline)
            #expect(
                events.all == ["start loadFromPersistence", "fail loadFromPersistence", "start source", "fail source"])
            let got10 = try await store.ask { .contents($0) }
            #expect(got10 == [:])
            let got11 = try await flow.fetch("bob").get()
            #expect(got11 == "fresh-bob")  // the injected failure is used up
            #expect(
                events.all.suffix(4) == [
                    "start source", "ok source", "start saveToPersistence", "ok saveToPersistence",
                ])
        }
    }

    @Test func fetchFromSourceNeverLoadsAndSaveFailureFailsIt() async throws {
        try await withTestSystem { system in
            var (flow, store, _) = makeFlow(system)
            let loads = Calls<String>()
            let load = flow.loadFromPersistence
            flow.loadFromPersistence = { key in
                loads.record(key); return load(key)
            }
            let got12 = try await flow.fetchFromSource("cy").get()
            #expect(got12 == "fresh-cy")
            #expect(loads.count == 0)
            store.tell(.refuseSaves(true))
            let refused = await flow.fetchFromSource("di").outcome
            #expect(unwrap(refused.failure) as? StoreError == .saveRefused)
            let alsoRefused = await flow.fetch("di").outcome  // load misses, source works, save fails
            #expect(unwrap(alsoRefused.failure) as? StoreError == .saveRefused)
            #expect(loads.all == ["di"])
        }
    }

    @Test func replacedStepsAndFlowWithoutPersistence() async throws {
        var flow = FetchFlow<Int, Int>(source: { key in Promise(value: key * 2) })
        let got13 = try await flow.fetch(4).get()
        #expect(got13 == 8)
        flow.source = { _ in Promise(error: SourceError.offline) }
        let outcome = await flow.fetch(4).outcome
        #expect(outcome.failure as? SourceError == .offline)
        flow.loadFromPersistence = { key in Promise(value: key) }
        let got14 = try await flow.fetch(4).get()
        #expect(got14 == 4)
    }
}
