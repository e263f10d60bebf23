// Not compiled in CI's sanitizer builds, which leave TroupePersistencePostgres out.
#if !TROUPE_CI_SANITIZER_BUILD
    import Testing
    import TroupePersistence
    @testable import TroupePersistencePostgres

    /// How `PostgresStore` splits a batch into runs of one kind: each identity's operations keep
    /// their order, and a batch in which many actors' appends and snapshots alternate becomes a
    /// few runs, not one per operation.
    @Suite struct PostgresBatchRunsTests {
        static func append(_ id: String) -> JournalOperation {
            .append(
                EventAppend(
                    persistenceID: PersistenceID(id), epoch: WriterEpoch(1), firstSequenceNumber: 1,
                    events: [SerializedEvent(typeName: "t", version: 1, payload: [1])]))
        }
        static func snapshot(_ id: String) -> JournalOperation {
            .saveSnapshot(
                SnapshotWrite(
                    persistenceID: PersistenceID(id), epoch: WriterEpoch(1),
                    snapshot: SerializedSnapshot(
                        sequenceNumber: 1, state: SerializedEvent(typeName: "s", version: 1, payload: [2])),
                    keep: 1))
        }

        @Test func alternatingAppendsAndSnapshotsOfManyActorsGoInTwoRuns() {
            let batch = (0..<1_000).map { $0 % 2 == 0 ? Self.append("a-\($0)") : Self.snapshot("a-\($0)") }
            let runs = PostgresStore.runs(of: batch)
            #expect(runs.count == 2)
            #expect(runs.map(\.count) == [500, 500])
        }

        /// 2,000 random batches of the four kinds over a few identities: every operation in
        /// exactly one run, each run of one kind (a state save alone), and each identity's
        /// operations applied in the order they were given.
        @Test func runsKeepEachIdentitysOrder() {
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<2_000 {
                let batch: [JournalOperation] = (0..<Int.random(in: 1...40, using: &generator)).map { _ in
                    let id = "id-\(Int.random(in: 0..<4, using: &generator))"
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0: return Self.append(id)
                    case 1: return .claimWriter(PersistenceID(id))
                    case 2: return Self.snapshot(id)
                    default:
                        return .saveState(
                            StateWrite(
                                persistenceID: PersistenceID(id), epoch: WriterEpoch(1), expectedRevision: 0,
                                state: SerializedEvent(typeName: "s", version: 1, payload: [3])))
                    }
                }
                let runs = PostgresStore.runs(of: batch)
                let order = runs.flatMap { $0 }
                #expect(order.sorted() == Array(batch.indices), "every operation once")
                for run in runs {
                    let kinds = Set(run.map { Self.kind(batch[$0]) })
                    #expect(kinds.count == 1, "one kind per run")
                    if kinds == ["state"] { #expect(run.count == 1, "a state save alone") }
                }
                for id in Set(batch.map(\.persistenceID)) {
                    let given = batch.indices.filter { batch[$0].persistenceID == id }
                    let applied = order.filter { batch[$0].persistenceID == id }
                    #expect(applied == given, "\(id)'s order")
                }
            }
        }

        static func kind(_ operation: JournalOperation) -> String {
            switch operation {
            case .append: "append"
            case .claimWriter: "claim"
            case .saveSnapshot: "snapshot"
            case .saveState: "state"
            }
        }
    }
#endif
