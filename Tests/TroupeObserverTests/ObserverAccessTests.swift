import Foundation
import Testing
import Troupe
import TroupeTestSupport

@testable import TroupeObserver

/// Who may use the observer, and what a request does: the token on every route, the state
/// document, and the stop and restart actions, checked by a client that writes raw HTTP.
@Suite(.serialized)
struct ObserverAccessTests {
    static let token = "observer-test-token-0123456789"

    static func withObserver(
        _ settings: ObserverSettings = ObserverSettings(token: token),
        introspection: ActorSystem.Introspection = .init(),
        _ body: (ActorSystem, Observer) async throws -> Void
    ) async throws {
        try await withTestSystem(introspection: introspection) { system in
            let observer = try await system.serveObserver(settings)
            do {
                try await body(system, observer)
            } catch {
                await observer.shutdown()
                throw error
            }
            await observer.shutdown()
        }
    }

    @Test func everyRouteRefusesARequestWithoutTheToken() async throws {
        try await Self.withObserver { system, observer in
            let counter = system.spawn(Counter(), options: SpawnOptions(name: "kept"))
            let port = observer.port
            for target in ["/", "/index.html", "/api/state", "/ws", "/nothing", "/?token=wrong-token-0123456789"] {
                let reply = try await ObserverClient.get(port: port, target)
                #expect(reply?.status == 401, "GET \(target)")
                #expect(reply?.body.contains("token required") == true)
            }
            let almost = String(Self.token.dropLast()) + "X"
            #expect(try await ObserverClient.get(port: port, "/?token=\(almost)")?.status == 401)
            #expect(
                try await ObserverClient.get(port: port, "/api/state", headers: "Authorization: Bearer \(almost)\r\n")?
                    .status
                    == 401)
            let stop = try await ObserverClient.post(port: port, "/api/actors/\(counter.address.id)/stop")
            #expect(stop?.status == 401)
            #expect(!counter.isStopped)
            let (socket, status) = try await ObserverClient.openWebSocket(port: port, "/ws?token=\(almost)")
            #expect(status == 401)
            _ = socket
            #expect(observer.samplesTaken == 0, "an unauthenticated request read the system")
        }
    }

    @Test func theTokenInTheURLOrABearerHeaderOpensThePageAndTheState() async throws {
        try await Self.withObserver { system, observer in
            let page = try await ObserverClient.get(port: observer.port, "/?token=\(Self.token)")
            #expect(page?.status == 200)
            #expect(page?.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(page?.headers["content-security-policy"]?.contains("default-src 'none'") == true)
            #expect(page?.body.contains("<title>Troupe observer</title>") == true)
            #expect(page?.body.contains("http://") == false, "the page must load nothing from elsewhere")
            let state = try await ObserverClient.get(
                port: observer.port, "/api/state", headers: "Authorization: Bearer \(Self.token)\r\n")
            #expect(state?.status == 200)
            let systemPart = state?.json?["system"] as? [String: Any]
            #expect(systemPart?["name"] as? String == system.configuration.name)
            #expect((systemPart?["workers"] as? [Any])?.count == system.workerCount)
            #expect(observer.url == "http://127.0.0.1:\(observer.port)/?token=\(Self.token)")
        }
    }

    @Test func theStateListsTheTopActorsInTheOrderAndSearchAsked() async throws {
        try await Self.withObserver { system, observer in
            var refs: [ActorRef<Counter.Message>] = []
            for index in 0..<12 {
                let ref = system.spawn(
                    Counter(), options: SpawnOptions(name: index % 2 == 0 ? "even-\(index)" : "odd-\(index)"))
                for _ in 0..<(index * 3) { ref.tell(.add(1)) }
                refs.append(ref)
            }
            // Every message handled (an ask answers after the tells before it).
            for ref in refs { _ = try await ref.ask { .get($0) } }
            func state(_ query: String) async throws -> RawReply? {
                try await ObserverClient.get(port: observer.port, "/api/state?token=\(Self.token)&\(query)")
            }
            let busiest = try #require(try await state("sort=processed&limit=3"))
            #expect(busiest.actors.map { $0["name"] as? String } == ["odd-11", "even-10", "odd-9"])
            #expect(busiest.actors.map { $0["processed"] as? Int } == [34, 31, 28], "tells plus the ask")
            let view = busiest.json?["view"] as? [String: Any]
            #expect(view?["matching"] as? Int == 12)
            #expect(view?["limit"] as? Int == 3)

            let byName = try #require(try await state("sort=name&q=EVEN&limit=500"))
            let names = byName.actors.compactMap { $0["name"] as? String }
            #expect(names == ["even-0", "even-10", "even-2", "even-4", "even-6", "even-8"])
            #expect((byName.json?["view"] as? [String: Any])?["q"] as? String == "even")

            // Bad values keep the defaults; the limit is clamped.
            let odd = try #require(try await state("sort=bogus&limit=-4&q=%6Fdd"))
            #expect((odd.json?["view"] as? [String: Any])?["sort"] as? String == "processed")
            #expect(odd.actors.count == 1)
            #expect(odd.actors.first?["name"] as? String == "odd-11")
            #expect(busiest.actors.allSatisfy { $0["parent"] is NSNull }, "the system spawned them")
        }
    }

    @Test func eachActorNamesItsParentAndParentSearchesListChildren() async throws {
        try await Self.withObserver { system, observer in
            let brood = system.spawn(Brood(), options: SpawnOptions(name: "brood"))
            #expect(try await brood.ask { .hatch(4, $0) } == 4)
            _ = system.spawn(Counter(), options: SpawnOptions(name: "loner"))
            let id = brood.address.id
            let children = try #require(
                try await ObserverClient.get(
                    port: observer.port, "/api/state?token=\(Self.token)&sort=name&q=parent%3A%23\(id)"))
            #expect(children.actors.count == 4)
            #expect(children.actors.allSatisfy { $0["parent"] as? Int == Int(id) })
            #expect((children.json?["view"] as? [String: Any])?["matching"] as? Int == 4)
            let parent = try #require(
                try await ObserverClient.get(port: observer.port, "/api/state?token=\(Self.token)&q=brood"))
            #expect(parent.actors.map { $0["name"] as? String } == ["brood"])
            #expect(parent.actors.first?["parent"] is NSNull)
        }
    }

    @Test func anInspectableActorDescribesItselfAndTakesTestMessagesOthersAreRefused() async throws {
        try await Self.withObserver { system, observer in
            let tally = system.spawn(Tally(), options: SpawnOptions(name: "tally"))
            let counter = system.spawn(Counter(), options: SpawnOptions(name: "plain"))
            let (port, token) = (observer.port, Self.token)
            let state = try #require(try await ObserverClient.get(port: port, "/api/state?token=\(token)&sort=name"))
            #expect(state.actors.first { $0["name"] as? String == "tally" }?["inspectable"] as? Bool == true)
            #expect(state.actors.first { $0["name"] as? String == "plain" }?["inspectable"] as? Bool == false)

            let id = tally.address.id
            let first = try #require(
                try await ObserverClient.get(port: port, "/api/actors/\(id)/describe?token=\(token)"))
            #expect(first.status == 200)
            #expect(first.json?["description"] as? String == "0 counted")
            let sent = try await ObserverClient.post(
                port: port, "/api/actors/\(id)/message?token=\(token)&text=count%207")
            #expect(sent?.status == 200)
            #expect(sent?.json?["outcome"] as? String == "enqueued")
            let after = try await ObserverClient.get(port: port, "/api/actors/\(id)/describe?token=\(token)")
            #expect(after?.json?["description"] as? String == "7 counted")

            let refused = try await ObserverClient.post(
                port: port, "/api/actors/\(id)/message?token=\(token)&text=explode")
            #expect(refused?.status == 422)
            #expect((refused?.json?["error"] as? String)?.contains("refused") == true)
            let noText = try await ObserverClient.post(port: port, "/api/actors/\(id)/message?token=\(token)")
            #expect(noText?.status == 400)
            let plain = counter.address.id
            #expect(
                try await ObserverClient.get(port: port, "/api/actors/\(plain)/describe?token=\(token)")?.status == 422)
            #expect(
                try await ObserverClient.post(port: port, "/api/actors/\(plain)/message?token=\(token)&text=x")?.status
                    == 422)
            #expect(
                try await ObserverClient.get(port: port, "/api/actors/99999999/describe?token=\(token)")?.status == 404)
            #expect(try await ObserverClient.get(port: port, "/api/actors/x/describe?token=\(token)")?.status == 400)
            #expect(try await ObserverClient.get(port: port, "/api/actors/\(id)/describe")?.status == 401)
            #expect(try await tally.ask { .total($0) } == 7, "only the accepted text reached it")
        }
    }

    @Test func sectionsTablesAreInTheDocument() async throws {
        try await Self.withObserver { system, observer in
            let section = SnapshotSection(
                kind: "cluster", instance: "demo", values: [.init("members_alive", 2)],
                tables: [.init("members", columns: ["member", "calls_out_total"], rows: [["10.0.0.2:7337", "12"]])])
            system.provideSnapshotSection(key: "observer-test") { section }
            let state = try #require(
                try await ObserverClient.get(port: observer.port, "/api/state?token=\(Self.token)"))
            let sections = (state.json?["system"] as? [String: Any])?["sections"] as? [[String: Any]]
            let table = (sections?.first?["tables"] as? [[String: Any]])?.first
            #expect(table?["name"] as? String == "members")
            #expect(table?["columns"] as? [String] == ["member", "calls_out_total"])
            #expect(table?["rows"] as? [[String]] == [["10.0.0.2:7337", "12"]])
        }
    }

    @Test func theSystemsLastFailuresAreInTheDocumentNewestFirst() async throws {
        try await Self.withObserver { system, observer in
            let failing = system.spawn(
                FailOnDemand(), options: SpawnOptions(name: "failing", failureDecider: { _ in .resume }))
            failing.tell(.fail)
            failing.tell(.fail)
            _ = try await failing.ask { .ping($0) }
            let state = try #require(
                try await ObserverClient.get(port: observer.port, "/api/state?token=\(Self.token)"))
            let failures = try #require(
                (state.json?["system"] as? [String: Any])?["recentFailures"] as? [[String: Any]])
            #expect(failures.count == 2)
            #expect(failures.map { $0["failureCount"] as? Int } == [2, 1], "newest first")
            #expect(failures.allSatisfy { $0["id"] as? Int == Int(failing.address.id) })
            #expect(failures.first?["actor"] as? String == failing.address.description)
            #expect(failures.first?["action"] as? String == "resume")
            #expect((failures.first?["error"] as? String)?.contains("Failure") == true)
        }
    }

    @Test func stopAndRestartActOnTheActorTheyName() async throws {
        try await Self.withObserver { system, observer in
            let fromInstance = system.spawn(Counter(), options: SpawnOptions(name: "instance"))
            let fromFactory = system.spawn(options: SpawnOptions(name: "factory")) { Counter() }
            fromFactory.tell(.add(5))
            #expect(try await fromFactory.ask { .get($0) } == 5)
            let port = observer.port
            let token = Self.token

            let restart = try await ObserverClient.post(
                port: port, "/api/actors/\(fromFactory.address.id)/restart?token=\(token)")
            #expect(restart?.status == 200)
            #expect(try await fromFactory.ask { .get($0) } == 0, "a fresh instance from the factory")
            let refused = try await ObserverClient.post(
                port: port, "/api/actors/\(fromInstance.address.id)/restart?token=\(token)")
            #expect(refused?.status == 404)
            #expect(refused?.body.contains("spawned from an instance") == true)

            let stop = try await ObserverClient.post(
                port: port, "/api/actors/\(fromInstance.address.id)/stop?token=\(token)")
            #expect(stop?.status == 200)
            #expect(stop?.json?["stopped"] as? Bool == true)
            let terminated = await fromInstance.terminated()
            #expect(terminated.actor == fromInstance.address)
            let again = try await ObserverClient.post(
                port: port, "/api/actors/\(fromInstance.address.id)/stop?token=\(token)")
            #expect(again?.status == 404)
            #expect(try await ObserverClient.post(port: port, "/api/actors/abc/stop?token=\(token)")?.status == 400)
            #expect(try await ObserverClient.post(port: port, "/api/actors/1/explode?token=\(token)")?.status == 404)
            let put = try await ObserverClient.exchange(
                port: port, "PUT /api/state?token=\(token) HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
            #expect(put?.status == 405)
            #expect(!fromFactory.isStopped)
        }
    }

    @Test func settingsThatWouldExposeThePageAreRefusedWithWhatToDo() async throws {
        try await withTestSystem { system in
            await #expect(throws: ObserverError.remoteAccessNeedsOptIn(host: "0.0.0.0")) {
                _ = try await system.serveObserver(ObserverSettings(host: "0.0.0.0"))
            }
            await #expect(throws: ObserverError.tokenTooShort(length: 6)) {
                _ = try await system.serveObserver(ObserverSettings(token: "secret"))
            }
            await #expect(
                throws: ObserverError.invalidSetting(
                    "updateInterval 0.05 seconds is below 100 ms (ten updates a second)")
            ) {
                _ = try await system.serveObserver(ObserverSettings(updateInterval: .milliseconds(50)))
            }
            #expect(ObserverError.remoteAccessNeedsOptIn(host: "0.0.0.0").description.contains("SSH tunnel"))
            // Names that only look like loopback are somebody else's machine.
            for host in ["127.example.com", "127.0.0.1.nip.io", "localhost.example.com", "0.0.0.0", "::", "10.0.0.1"] {
                await #expect(throws: ObserverError.remoteAccessNeedsOptIn(host: host), "\(host)") {
                    _ = try await system.serveObserver(ObserverSettings(host: host))
                }
            }
            let first = try await system.serveObserver()
            do {
                _ = try await system.serveObserver(ObserverSettings(port: first.port))
                Issue.record("a second observer bound a taken port")
            } catch let error as ObserverError {
                guard case .bindFailed(_, let port, _) = error else {
                    Issue.record("expected bindFailed, got \(error)")
                    await first.shutdown()
                    return
                }
                #expect(port == first.port)
            }
            #expect(first.token.count == 32, "128 random bits in hexadecimal")
            await first.shutdown()
        }
    }

    @Test func loopbackMeansALoopbackAddressNotANameThatLooksLikeOne() {
        for host in ["127.0.0.1", "127.1.2.3", "127.255.255.254", "::1", "::ffff:127.0.0.1", "localhost"] {
            #expect(ObserverSettings(host: host).isLoopback, "\(host)")
        }
        for host in ["127.example.com", "127.0.0.1.example.com", "128.0.0.1", "::2", "::ffff:10.0.0.1", "", "local"] {
            #expect(!ObserverSettings(host: host).isLoopback, "\(host)")
        }
    }

    @Test func aFailureToStartTheThreadHasAnErrorOfItsOwn() {
        let error = ObserverError.threadFailed(reason: "EAGAIN")
        #expect(error.description == "the observer's thread did not start: EAGAIN")
        #expect(error != .invalidSetting("the observer's thread did not start: EAGAIN"))
    }
}

/// An actor that spawns counters as its children on request.
private struct Brood: ActorDefinition {
    enum Message: Sendable { case hatch(Int, Reply<Int>) }
    var children: [ActorRef<Counter.Message>] = []

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .hatch(let count, let reply):
            for _ in 0..<count { children.append(context.spawn(Counter())) }
            reply.succeed(children.count)
        }
    }
}

/// An inspectable actor: it describes its total and takes `count N`.
private struct Tally: InspectableActor {
    enum Message: Sendable {
        case count(Int)
        case total(Reply<Int>)
    }
    var total = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .count(let amount): total += amount
        case .total(let reply): reply.succeed(total)
        }
    }

    func inspectionDescription() -> String { "\(total) counted" }

    static func testMessage(from text: String) -> Message? {
        guard text.hasPrefix("count "), let amount = Int(text.dropFirst(6)) else { return nil }
        return .count(amount)
    }
}
