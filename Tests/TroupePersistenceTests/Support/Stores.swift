#if canImport(Glibc)
    import Glibc
#endif
import Troupe
import TroupePersistence
import TroupeTestSupport
import TroupePersistenceSQLite

/// Every behaviour is tested on each store.
enum StoreKind: String, CaseIterable, CustomStringConvertible, Sendable {
    case memory
    case sqlite

    var description: String { rawValue }

    /// A fresh, empty store, and what to call when done with it.
    func make() async throws -> TestStore {
        switch self {
        case .memory: return TestStore(store: InMemoryStore(), directory: nil)
        case .sqlite:
            let directory = makeTemporaryDirectory()
            let store = try await SQLiteStore.open(path: directory + "/events.sqlite", synchronous: .normal)
            return TestStore(store: store, directory: directory)
        }
    }
}

struct TestStore: Sendable {
    let store: any PersistenceStore
    /// The SQLite store's directory (removed by `close`).
    let directory: String?

    func close() async {
        if let sqlite = store as? SQLiteStore { try? await sqlite.close() }
        if let directory { removeDirectory(directory) }
    }
}

func makeTemporaryDirectory() -> String {
    var template = Array("/tmp/troupe-persistence-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(made != nil, "mkdtemp failed: \(errno)")
    return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func removeDirectory(_ path: String) {
    guard let directory = opendir(path) else { return }
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { unlink(path + "/" + name) }
    }
    closedir(directory)
    rmdir(path)
}

/// A fresh store of `kind`, a system and a journal on it for `body`; everything is shut down
/// and removed afterwards, also when `body` throws.
func withDurableRig(
    _ kind: StoreKind,
    _ body: (_ system: ActorSystem, _ journal: Journal, _ store: any PersistenceStore) async throws -> Void
) async throws {
    let test = try await kind.make()
    let system = makeTestSystem()
    let journal = Journal(store: test.store)
    do { try await body(system, journal, test.store) } catch {
        await system.shutdown()
        await journal.shutdown()
        await test.close()
        throw error
    }
    await system.shutdown()
    await journal.shutdown()
    await test.close()
}
