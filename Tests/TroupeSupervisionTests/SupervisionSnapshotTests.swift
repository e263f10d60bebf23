import Testing
import Troupe
import TroupeSupervision
import TroupeTestSupport

/// The supervision tree in the system's snapshots: a top-level supervisor's section lists its
/// children in order, a nested supervisor's right under it, with the actors that stand for each
/// child, restarts and failures, and links; the section goes with the supervisor.
@Suite struct SupervisionSnapshotTests {
    private static func section(_ system: ActorSystem, _ name: String) -> SnapshotSection? {
        system.snapshot().sections.first { $0.kind == "supervision" && $0.instance == name }
    }

    @Test func aSupervisorsTreeIsInTheSnapshotWithItsActorsRestartsAndLinks() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, name: "app")
            let journal = Journal()
            let database = try supervisor.superviseWorker(id: "db", journal: journal)
            let cache = try supervisor.superviseWorker(id: "cache")
            try supervisor.link("cache", toParent: "db")
            let pool = try supervisor.supervisePool(id: "pool", size: 2) { _ in Worker(Journal()) }
            let nested = try supervisor.superviseSupervisor(id: "jobs")
            let job = try nested.superviseWorker(id: "job")

            database.tell(.fail("once"))
            await waitUntil("db restarted") { journal.restarts == 1 }
            let section = try #require(Self.section(system, "app"))
            let table = try #require(section.tables.first { $0.name == "children" })
            #expect(table.columns == ["child", "kind", "actors", "restarts_total", "failures_total", "links_to"])
            #expect(table.rows.map { $0[0] } == ["db", "cache", "pool", "jobs", "jobs/job"])
            #expect(table.rows.map { $0[1] } == ["actor", "actor", "pool", "supervisor", "actor"])
            #expect(table.rows[0][2] == database.address.description)
            #expect(table.rows[0][3] == "1", "db's restart")
            #expect(table.rows[0][4] == "1", "db's failure")
            #expect(table.rows[0][5] == "cache", "cache is linked to db")
            #expect(table.rows[1][2] == cache.address.description)
            #expect(table.rows[2][2] == pool.members.map(\.address.description).joined(separator: " "))
            #expect(table.rows[4][2] == job.address.description)
            let values = Dictionary(uniqueKeysWithValues: section.values.map { ($0.name, $0.value) })
            #expect(values["children"] == 5)
            // The link restarted cache with db.
            #expect(values["restarts_total"] == 2)
            #expect(values["failures_total"] == 1)
            // Nested supervisors are drawn in their parent's section, not in one of their own.
            #expect(system.snapshot().sections.filter { $0.kind == "supervision" }.count == 1)
        }
    }

    @Test func aChildStoppedBySupervisionOrUnsupervisedLeavesTheTable() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, name: "shop")
            let stopping = try supervisor.superviseWorker(id: "once", policy: ChildPolicy(decider: { _ in .stop }))
            let kept = try supervisor.superviseWorker(id: "kept")
            try supervisor.superviseWorker(id: "gone")
            #expect(Self.section(system, "shop")?.tables.first?.rows.map { $0[0] } == ["once", "kept", "gone"])
            try supervisor.unsupervise(id: "gone")
            stopping.tell(.fail("stop"))
            await waitUntil("once stopped") { stopping.isStopped }
            let rows = try #require(Self.section(system, "shop")?.tables.first?.rows)
            #expect(rows.map { $0[0] } == ["kept"])
            #expect(rows.first?[2] == kept.address.description)
        }
    }

    @Test func theSectionGoesWithTheSupervisor() async throws {
        try await withTestSystem { system in
            do {
                let supervisor = Supervisor(system: system, name: "short-lived")
                #expect(Self.section(system, "short-lived") != nil)
                withExtendedLifetime(supervisor) {}
            }
            #expect(Self.section(system, "short-lived") == nil, "a supervisor nobody holds left its section")
        }
    }
}
