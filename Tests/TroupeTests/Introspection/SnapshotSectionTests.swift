import Testing
import Troupe
import TroupeTestSupport

/// Sections other code adds to `system.snapshot()`.
@Suite struct SnapshotSectionTests {
    final class Source: Sendable {
        let recorder = LatencyRecorder()
        let value: Int
        init(value: Int) { self.value = value }
        var section: SnapshotSection {
            SnapshotSection(
                kind: "pool", instance: "db", values: [.init("open_connections", value)],
                histograms: [.init("round_trip", recorder.histogram)])
        }
    }

    @Test func aProvidedSectionIsInEverySnapshotAndItsReport() async throws {
        try await withTestSystem { system in
            #expect(system.snapshot().sections.isEmpty)
            let source = Source(value: 3)
            source.recorder.record(.microseconds(250))
            system.provideSnapshotSection(key: "pool") { [weak source] in source?.section }
            let snapshot = system.snapshot()
            #expect(snapshot.sections == [source.section])
            let report = snapshot.description
            #expect(report.contains("pool db: open_connections 3"), "\(report)")
            #expect(report.contains("round_trip: n=1"), "\(report)")
        }
    }

    @Test func theSameKeyReplacesAndANilAnswerRemoves() async throws {
        try await withTestSystem { system in
            let first = Source(value: 1)
            let second = Source(value: 2)
            let other = Source(value: 9)
            system.provideSnapshotSection(key: 1) { [weak first] in first?.section }
            system.provideSnapshotSection(key: 2) { [weak other] in other?.section }
            system.provideSnapshotSection(key: 1) { [weak second] in second?.section }
            #expect(system.snapshot().sections.map { $0.values[0].value } == [2, 9], "replaced in place")
            var gone: Source? = Source(value: 5)
            system.provideSnapshotSection(key: 3) { [weak gone] in gone?.section }
            #expect(system.snapshot().sections.count == 3)
            gone = nil
            #expect(
                system.snapshot().sections.map { $0.values[0].value } == [2, 9],
                "a provider whose source has gone is dropped")
            withExtendedLifetime((first, second, other)) {}
        }
    }

    @Test func aSectionsTablesAreInItsReport() async throws {
        try await withTestSystem { system in
            let section = SnapshotSection(
                kind: "cluster", instance: "demo",
                tables: [
                    .init(
                        "members", columns: ["member", "status", "calls_out_total"],
                        rows: [["10.0.0.2:7337", "alive", "12"], ["10.0.0.3:7337", "suspect", "0"]])
                ])
            system.provideSnapshotSection(key: "tables") { section }
            let snapshot = system.snapshot()
            #expect(snapshot.sections == [section])
            let report = snapshot.description
            #expect(report.contains("  members: member | status | calls_out_total"), "\(report)")
            #expect(report.contains("    10.0.0.3:7337 | suspect | 0"), "\(report)")
        }
    }
}
