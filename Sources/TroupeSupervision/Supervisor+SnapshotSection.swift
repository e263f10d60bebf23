import Troupe

/// The supervision tree in the system's snapshots: each top-level supervisor adds a
/// `supervision` section (TroupeObserver's page draws it) whose `children` table lists its
/// children in supervision order, and under each nested supervisor that supervisor's own, with
/// the actors that stand for each child now (their addresses change with nothing: a restart
/// keeps the actor), its restarts and failures, and the children it is linked to.
extension Supervisor {
    /// Registers the section of a top-level supervisor (a nested one is drawn in its parent's).
    /// Weak: the section goes when the supervisor does.
    func provideSnapshotSection() {
        system.provideSnapshotSection(key: SectionKey(supervisor: ObjectIdentifier(self))) { [weak self] in
            self?.snapshotSection
        }
    }

    var snapshotSection: SnapshotSection {
        var rows: [[String]] = []
        var totals = (children: 0, restarts: 0, failures: 0)
        appendRows(to: &rows, totals: &totals, path: "")
        return SnapshotSection(
            kind: "supervision", instance: name,
            values: [
                .init("children", totals.children), .init("restarts_total", totals.restarts),
                .init("failures_total", totals.failures),
            ],
            tables: [
                .init(
                    "children", columns: ["child", "kind", "actors", "restarts_total", "failures_total", "links_to"],
                    rows: rows)
            ])
    }

    /// The rows of this supervisor's children, each nested supervisor's right after its own
    /// row (`path` names the child: `parent/child`). The state is copied under the lock and
    /// the nested supervisors read after it is released, so no two supervisors' locks are held
    /// at once.
    private func appendRows(
        to rows: inout [[String]], totals: inout (children: Int, restarts: Int, failures: Int), path: String
    ) {
        let children = state.withLock { state in
            state.order.compactMap { id -> (id: String, entry: ChildEntry, links: [String])? in
                guard let entry = state.entries[id] else { return nil }
                return (id, entry, state.linkedChildren[id] ?? [])
            }
        }
        for child in children {
            let name = path + child.id
            totals.children += 1
            totals.restarts += child.entry.restarts
            totals.failures += child.entry.failures
            let kind: String
            let actors: String
            var nested: Supervisor?
            switch child.entry.target {
            case .actor(let ref):
                kind = "actor"
                actors = Self.describe([ref])
            case .pool(let pool):
                kind = "pool"
                actors = Self.describe(pool.members())
            case .supervisor(let supervisor):
                kind = "supervisor"
                actors = ""
                nested = supervisor
            case nil:
                kind = "starting"
                actors = ""
            }
            rows.append([
                name, kind, actors, String(child.entry.restarts), String(child.entry.failures),
                child.links.joined(separator: " "),
            ])
            nested?.appendRows(to: &rows, totals: &totals, path: name + "/")
        }
    }

    /// Actors' addresses as shown (`name#ID`), the stopped ones marked; at most eight, then how
    /// many more.
    private static func describe(_ refs: [any SupervisedRef]) -> String {
        var shown = refs.prefix(8).map { $0.address.description + ($0.isStopped ? " (stopped)" : "") }
        if refs.count > 8 { shown.append("+\(refs.count - 8) more") }
        return shown.joined(separator: " ")
    }
}

private struct SectionKey: Hashable, Sendable {
    let supervisor: ObjectIdentifier
}
