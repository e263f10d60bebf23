import Testing
import Troupe
import TroupeTestSupport

@testable import TroupeObserver
@testable import troupe_observe

/// `troupe-observe`: its endpoint against a real observer, and the table it draws.
@Suite(.serialized)
struct TerminalViewTests {
    @Test func theTableShowsTheActorsInTheChosenOrderFromARealObserver() async throws {
        try await ObserverAccessTests.withObserver { system, observer in
            for (index, name) in ["alpha", "beta", "gamma"].enumerated() {
                let ref = system.spawn(Counter(), options: SpawnOptions(name: name))
                for _ in 0..<(index * 10) { ref.tell(.add(1)) }
                #expect(try await ref.ask { .get($0) } == index * 10)
            }
            let endpoint = try ObserverEndpoint(url: observer.url)
            #expect(endpoint.port == observer.port)
            var view = TableView(sort: .processed, search: "", rows: 2)
            let busiest = TopTable.render(try endpoint.state(view), view: view, width: 200)
            let rows = busiest.filter { $0.hasPrefix("gamma#") || $0.hasPrefix("beta#") || $0.hasPrefix("alpha#") }
            #expect(rows.count == 2)
            #expect(rows.first?.hasPrefix("gamma#") == true)
            #expect(rows.first?.contains("Counter") == true)
            #expect(busiest.contains { $0.contains("actors by processed: 2 of 3") })

            view = TableView(sort: .name, search: "a", rows: 10)
            let byName = TopTable.render(try endpoint.state(view), view: view, width: 200)
            #expect(
                byName.filter { $0.contains("#") && !$0.contains("worker") }.map { String($0.prefix(5)) } == [
                    "alpha", "beta#", "gamma",
                ])
            #expect(byName.allSatisfy { $0.count <= 200 })
        }
    }

    @Test func aWrongTokenOrURLSaysWhatToPass() async throws {
        try await ObserverAccessTests.withObserver { _, observer in
            let wrong = try ObserverEndpoint(url: "http://127.0.0.1:\(observer.port)/?token=not-the-token-at-all")
            #expect {
                _ = try wrong.state(TableView())
            } throws: { error in
                guard case .refused(401, _) = error as? ObserverEndpoint.Failure else { return false }
                return "\(error)".contains("refused the token")
            }
            #expect(throws: ObserverEndpoint.Failure.self) { _ = try ObserverEndpoint(url: "http://127.0.0.1:1/") }
            #if TROUPE_CI_SANITIZER_BUILD
                // Built without swift-nio-ssl: an https URL is refused with its own explanation.
                do {
                    _ = try ObserverEndpoint(url: "https://x/?token=y")
                    Issue.record("an https URL was accepted without TLS")
                } catch {
                    #expect("\(error)".contains("does not speak"), "an https URL gets its own explanation: \(error)")
                }
            #else
                // Over TLS (TroupeObserverTLSTests reads a TLS observer through it).
                let secure = try ObserverEndpoint(url: "https://observer.example:8443/?token=y")
                #expect(secure.usesTLS && secure.host == "observer.example" && secure.port == 8443)
            #endif
            #expect(throws: ObserverEndpoint.Failure.self) { _ = try ObserverEndpoint(url: "ftp://x/?token=y") }
            let closed = try ObserverEndpoint(url: "http://127.0.0.1:1/?token=abc")
            #expect {
                _ = try closed.state(TableView())
            } throws: { error in
                guard case .unreachable = error as? ObserverEndpoint.Failure else { return false }
                return true
            }
        }
    }

    @Test func numbersAndTypesAreShortenedForTheTable() {
        #expect(TopTable.format(1_234_567) == "1,234,567")
        #expect(TopTable.format(-1000) == "-1,000")
        #expect(TopTable.format(12) == "12")
        #expect(
            TopTable.shortType("Troupe.LoadReportingMember<ShopActors.PriceBackend>")
                == "LoadReportingMember<PriceBackend>")
        #expect(TopTable.pad("a-very-long-actor-name", 10) == "a-very-l… ")
    }
}
