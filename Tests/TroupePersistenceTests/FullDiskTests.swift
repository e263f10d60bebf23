#if canImport(Glibc)
    import Glibc
#endif
import Testing
import Troupe
import TroupePersistence
import TroupePersistenceSQLite
import TroupeTestSupport

/// A disk that fills up under an SQLite store: a real filesystem (a 2 MiB tmpfs) answering
/// ENOSPC. Mounting needs root; elsewhere the suite is skipped, saying so.
@Suite(.enabled(if: SmallDisk.canMount, "mounting a tmpfs needs root (CI runs as root)"))
struct FullDiskTests {
    /// Writes fail with a typed error once the disk is full, nothing acknowledged is lost, and
    /// the same store writes again once space is freed, without reopening.
    @Test func aFullDiskFailsWritesWithATypedErrorAndLosesNothingAcknowledged() async throws {
        let disk = try SmallDisk(megabytes: 2)
        defer { disk.unmount() }
        // Most of the disk goes to a file the test deletes later, to free space.
        try disk.fill(path: disk.path + "/ballast", kilobytes: 1_024)

        let store = try await SQLiteStore.open(path: disk.path + "/events.sqlite", synchronous: .full)
        let system = makeTestSystem()
        let journal = Journal(store: store)
        let accountCount = 8
        var acknowledged = Array(repeating: 0, count: accountCount)
        var accounts = (0..<accountCount).map {
            system.spawn(persistent: Account(persistenceID: PersistenceID("full-\($0)")), journal: journal)
        }
        var failure: AskError?
        // Deposits of 1, round robin, until a write fails (each commit adds pages to the WAL,
        // which is not checkpointed before 1,000 pages: a few hundred commits fill the disk).
        writing: for _ in 0..<200_000 {
            for index in 0..<accountCount {
                switch await accounts[index].actorRef.askResult(timeout: .seconds(10), { .command(.deposit(1, $0)) }) {
                case .success(let balance):
                    acknowledged[index] += 1
                    #expect(balance == acknowledged[index])
                case .failure(let error):
                    failure = error
                    break writing
                }
            }
        }
        let error = try #require(failure, "the disk never filled up")
        #expect(acknowledged.reduce(0, +) >= 50, "the disk filled only after some writes: \(acknowledged)")
        guard case .failed(let cause) = error, case .storeFailed(_, let underlying) = cause as? PersistenceError else {
            Issue.record("a full disk must fail the write as PersistenceError.storeFailed, got \(error)")
            return
        }
        #expect("\(underlying)".contains("full"), "the underlying error names the cause: \(underlying)")

        // Space freed: the same store, a new incarnation of each account (the failed ones
        // stopped), recovers every acknowledged deposit and writes again.
        disk.remove(disk.path + "/ballast")
        accounts = (0..<accountCount).map {
            system.spawn(persistent: Account(persistenceID: PersistenceID("full-\($0)")), journal: journal)
        }
        for index in 0..<accountCount {
            // Recovery may meet the instance that failed still stopping: ask again then.
            var balance: Int?
            for _ in 0..<100 where balance == nil {
                balance = try? await accounts[index].ask(timeout: .seconds(10)) { .balance($0) }
                if balance == nil { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(balance == acknowledged[index], "full-\(index): acknowledged \(acknowledged[index])")
            #expect(try await accounts[index].ask { .deposit(1, $0) } == acknowledged[index] + 1)
        }
        await system.shutdown()
        await journal.shutdown()
        try await store.close()
    }
}

/// A tmpfs of a few megabytes, mounted on a fresh directory.
struct SmallDisk {
    let path: String

    static let canMount: Bool = {
        guard geteuid() == 0, let disk = try? SmallDisk(megabytes: 1) else { return false }
        disk.unmount()
        return true
    }()

    struct MountFailed: Error { let errno: Int32 }
    struct WriteFailed: Error { let errno: Int32 }

    init(megabytes: Int) throws {
        path = makeTemporaryDirectory()
        guard mount("tmpfs", path, "tmpfs", 0, "size=\(megabytes)m") == 0 else {
            let failed = errno
            rmdir(path)
            throw MountFailed(errno: failed)
        }
    }

    func fill(path: String, kilobytes: Int) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(descriptor) }
        let block = [UInt8](repeating: 0xA5, count: 1_024)
        for _ in 0..<kilobytes where write(descriptor, block, block.count) != block.count {
            throw WriteFailed(errno: errno)
        }
    }

    func remove(_ file: String) { unlink(file) }

    func unmount() {
        umount2(path, Int32(MNT_DETACH))
        rmdir(path)
    }
}
