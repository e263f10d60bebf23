import Testing
import Troupe
import TroupeTestSupport

@testable import TroupeObserver

/// The page's WebSocket: a document at once, then one only when something changed, at most
/// one per update interval; view changes from the page; and no reading of the system while
/// no page is connected.
@Suite(.serialized)
struct ObserverLiveTests {
    static let token = ObserverAccessTests.token
    static let interval = Duration.milliseconds(150)

    @Test func nothingIsSampledWhileNoPageIsConnected() async throws {
        let settings = ObserverSettings(token: Self.token, updateInterval: Self.interval)
        try await ObserverAccessTests.withObserver(settings) { system, observer in
            let counter = system.spawn(Counter())
            for _ in 0..<100 { counter.tell(.add(1)) }
            try await Task.sleep(for: Self.interval * 6)
            #expect(observer.samplesTaken == 0)

            let (socket, status) = try await ObserverClient.openWebSocket(
                port: observer.port, "/ws?token=\(Self.token)")
            #expect(status == 101)
            #expect(await ObserverClient.readDocument(socket) != nil)
            #expect(await waitUntil("samples while the page is open") { observer.samplesTaken >= 3 })
            await socket.send(ObserverClient.clientFrame(opcode: 8, []))
            #expect(await socket.closedByPeer(within: .seconds(5)))
            #expect(await waitUntil("the page left") { observer.openConnections == 0 })
            let afterClose = observer.samplesTaken
            try await Task.sleep(for: Self.interval * 6)
            #expect(observer.samplesTaken == afterClose, "the observer kept sampling with no page")
        }
    }

    @Test func aPageGetsADocumentAtOnceThenOnlyChanges() async throws {
        let settings = ObserverSettings(token: Self.token, updateInterval: Self.interval)
        try await ObserverAccessTests.withObserver(settings) { system, observer in
            let counter = system.spawn(Counter(), options: SpawnOptions(name: "watched"))
            #expect(try await counter.ask { .get($0) } == 0)
            let (socket, status) = try await ObserverClient.openWebSocket(
                port: observer.port, "/ws?token=\(Self.token)&q=watched")
            #expect(status == 101)
            let first = try #require(await ObserverClient.readDocument(socket))
            #expect((first["actors"] as? [[String: Any]])?.first?["name"] as? String == "watched")
            // The second sample gives the first rates (null before); after that an idle system
            // changes nothing, so nothing more is sent.
            _ = await ObserverClient.readDocument(socket, within: Self.interval * 4)
            #expect(
                await ObserverClient.readFrame(socket, within: Self.interval * 6) == nil,
                "a document was sent although nothing changed")

            for _ in 0..<10 { counter.tell(.add(1)) }
            #expect(try await counter.ask { .get($0) } == 10)
            // A sample may catch the turn half done (a worker running, fewer handled): the page
            // then gets that document, and the finished count in a later one.
            var processed: Int?
            for _ in 0..<10 {
                guard let changed = await ObserverClient.readDocument(socket) else { break }
                processed = (changed["actors"] as? [[String: Any]])?.first?["processed"] as? Int
                if processed == 12 { break }
            }
            #expect(processed == 12)

            // The page asks for another view: it comes at once (or with the next tick).
            await socket.send(ObserverClient.clientFrame(opcode: 1, Array("sort=name&limit=1&q=".utf8)))
            var view: [String: Any]?
            for _ in 0..<5 {
                guard let document = await ObserverClient.readDocument(socket) else { break }
                view = document["view"] as? [String: Any]
                if view?["limit"] as? Int == 1 { break }
            }
            #expect(view?["limit"] as? Int == 1)
            #expect(view?["sort"] as? String == "name")
        }
    }

    @Test func afterTheFirstDocumentAPageIsSentOnlyTheRowsThatChanged() async throws {
        let settings = ObserverSettings(token: Self.token, updateInterval: Self.interval)
        try await ObserverAccessTests.withObserver(settings) { system, observer in
            let idle = (0..<30).map { system.spawn(Counter(), options: SpawnOptions(name: "idle-\($0)")) }
            let busy = system.spawn(Counter(), options: SpawnOptions(name: "busy"))
            for actor in idle + [busy] { _ = try await actor.ask { .get($0) } }
            let (socket, status) = try await ObserverClient.openWebSocket(
                port: observer.port, "/ws?token=\(Self.token)&limit=100")
            #expect(status == 101)
            var held = try #require(await ObserverClient.readDocument(socket))
            #expect(held["delta"] == nil, "the first document is whole")
            #expect((held["actors"] as? [[String: Any]])?.count == 31)
            let loading = Task {
                while !Task.isCancelled {
                    for _ in 0..<100 { busy.tell(.add(1)) }
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            var deltas = 0
            var largestRowCount = 0
            for _ in 0..<7 {
                guard let message = await ObserverClient.readDocument(socket) else { break }
                #expect(message["delta"] as? Bool == true)
                deltas += 1
                // The first delta gives every row its first rate (null until two samples), so
                // it holds them all; from then on only the busy actor's row changes.
                if deltas > 1 {
                    largestRowCount = max(largestRowCount, (message["actors"] as? [[String: Any]])?.count ?? 0)
                }
                held = ObserverClient.merge(message, into: held)
            }
            loading.cancel()
            #expect(deltas == 7)
            #expect(largestRowCount <= 2, "deltas carried \(largestRowCount) rows: idle actors' rows were sent again")
            let rows = held["actors"] as? [[String: Any]] ?? []
            #expect(rows.count == 31, "the merged document lost rows")
            let busyRow = rows.first { $0["name"] as? String == "busy" }
            #expect((busyRow?["processed"] as? Int ?? 0) > 100, "the busy actor's count did not reach the page")
        }
    }

    @Test func updatesComeAtMostOncePerIntervalUnderLoad() async throws {
        let settings = ObserverSettings(token: Self.token, updateInterval: .milliseconds(200))
        try await ObserverAccessTests.withObserver(settings) { system, observer in
            let counter = system.spawn(Counter())
            let (socket, status) = try await ObserverClient.openWebSocket(
                port: observer.port, "/ws?token=\(Self.token)")
            #expect(status == 101)
            let loading = Task {
                while !Task.isCancelled {
                    for _ in 0..<1000 { counter.tell(.add(1)) }
                    try? await Task.sleep(for: .milliseconds(5))
                }
            }
            let started = ContinuousClock.now
            var documents = 0
            while ContinuousClock.now - started < .seconds(2) {
                guard await ObserverClient.readDocument(socket, within: .seconds(2)) != nil else { break }
                documents += 1
            }
            loading.cancel()
            // 2 s at 200 ms: 10 ticks, plus the first document.
            #expect(documents >= 5, "the page got \(documents) documents in 2 s under load")
            #expect(documents <= 12, "the page got \(documents) documents in 2 s: more than one per interval")
        }
    }

    @Test func aPageThatStopsReadingIsSentNothingMoreAndCostsNoSamples() async throws {
        let settings = ObserverSettings(token: Self.token, updateInterval: .milliseconds(100))
        try await ObserverAccessTests.withObserver(settings) { system, observer in
            // Documents of about 20 KiB that change every interval fill the page's buffers fast.
            let padding = String(repeating: "x", count: 200)
            let counters = (0..<50).map { index in
                system.spawn(Counter(), options: SpawnOptions(name: "counter-\(index)-\(padding)"))
            }
            let loading = Task {
                while !Task.isCancelled {
                    for counter in counters { counter.tell(.add(1)) }
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            defer { loading.cancel() }
            let (socket, status) = try await ObserverClient.openWebSocket(
                port: observer.port, "/ws?token=\(Self.token)&limit=50", receiveBufferSize: 4096)
            #expect(status == 101)
            // The page reads nothing more: once the kernel's buffers and the channel's 256 KiB are
            // full the channel is unwritable, and documents stop.
            var stalled = false
            var sent = observer.documentsSent
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                try await Task.sleep(for: .seconds(1))
                let now = observer.documentsSent
                if now == sent {
                    stalled = true
                    break
                }
                sent = now
            }
            try #require(stalled, "documents kept going to a page that reads nothing (\(sent) sent)")
            let samples = observer.samplesTaken
            try await Task.sleep(for: .seconds(1))
            #expect(
                observer.samplesTaken - samples <= 1,
                "\(observer.samplesTaken - samples) samples in 10 intervals with no page able to take a document")
            #expect(observer.documentsSent == sent)
            _ = socket
        }
    }
}
