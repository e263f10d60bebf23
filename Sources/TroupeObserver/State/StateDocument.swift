/// What a page is shown: the system's figures, the view, the actors' rows and the job lanes,
/// kept in parts so that a page that has the previous document is sent only what changed
/// (``delta(from:)``). `GET /api/state` and a page's first document are the whole (``text``).
struct StateDocument: Equatable {
    /// A member of the `system` object: its name and its value as JSON.
    struct Member: Equatable {
        let name: String
        let json: String
    }

    /// An actor's row: its id and the row as a JSON object.
    struct Row: Equatable {
        let id: UInt64
        let json: String
    }

    let uptimeSeconds: Int
    /// The `system` object's members, in order; the same names in every document.
    let system: [Member]
    /// The `view` object.
    let view: String
    let actors: [Row]
    /// The `jobLanes` array.
    let jobLanes: String

    /// The whole document: `{"uptimeSeconds":…,"system":{…},"view":{…},"actors":[…],"jobLanes":[…]}`.
    var text: String {
        var text = "{\"uptimeSeconds\":\(uptimeSeconds),\"system\":"
        Self.object(system, into: &text)
        text += ",\"view\":" + view + ",\"actors\":"
        Self.array(actors[...], into: &text)
        text += ",\"jobLanes\":" + jobLanes + "}"
        return text
    }

    /// What changed since `previous` (the last document the page was sent), or nil when only
    /// the uptime did: `{"uptimeSeconds":…,"delta":true,…}` with only the parts that changed:
    /// - `system`: the members whose value changed (the page merges them into its own);
    /// - `view` and `jobLanes`: whole, when they changed;
    /// - `actors`: the rows that are new or changed; `actorOrder`: every row's id in order,
    ///   when the order or the set of rows changed (a row not in it is gone).
    /// A page applies a delta to the document it holds and has this document.
    func delta(from previous: StateDocument) -> String? {
        assert(
            system.map(\.name) == previous.system.map(\.name),
            "the system object's members changed names: a delta cannot remove a member")
        let changedMembers = zip(system, previous.system).filter { $0.0 != $0.1 }.map(\.0)
        let previousRows = Dictionary(previous.actors.map { ($0.id, $0.json) }, uniquingKeysWith: { first, _ in first })
        let changedRows = actors.filter { previousRows[$0.id] != $0.json }
        let reordered = actors.map(\.id) != previous.actors.map(\.id)
        let viewChanged = view != previous.view
        let lanesChanged = jobLanes != previous.jobLanes
        guard !changedMembers.isEmpty || !changedRows.isEmpty || reordered || viewChanged || lanesChanged else {
            return nil
        }
        var text = "{\"uptimeSeconds\":\(uptimeSeconds),\"delta\":true"
        if !changedMembers.isEmpty {
            text += ",\"system\":"
            Self.object(changedMembers, into: &text)
        }
        if viewChanged { text += ",\"view\":" + view }
        if reordered { text += ",\"actorOrder\":[" + actors.map { String($0.id) }.joined(separator: ",") + "]" }
        if !changedRows.isEmpty {
            text += ",\"actors\":"
            Self.array(changedRows[...], into: &text)
        }
        if lanesChanged { text += ",\"jobLanes\":" + jobLanes }
        return text + "}"
    }

    private static func object(_ members: [Member], into text: inout String) {
        text += "{"
        for (index, member) in members.enumerated() {
            if index > 0 { text += "," }
            JSONText.quote(member.name, into: &text)
            text += ":" + member.json
        }
        text += "}"
    }

    private static func array(_ rows: ArraySlice<Row>, into text: inout String) {
        text += "[" + rows.map(\.json).joined(separator: ",") + "]"
    }
}
