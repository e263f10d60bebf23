// Where the remote-call latency rows' event loops run.
//
// A round trip at one call in flight hands the message from thread to thread four times; on
// this VM a hand-off to a thread whose vCPU is idle costs ~30-40 µs more than one to a thread
// on the CPU that just gave way. Left to the scheduler, the raw NIO round trip and the remote
// call land in either mode from run to run, each on its own (p50s of 25-30 µs or 45-65 µs for
// either), so the ratio between them measured placement, not code. The latency rows therefore
// put both forms' threads alike: the calling side's event loop on CPU 0, the answering side's
// on CPU 1 (as on two machines, each side's I/O on its own core). `--unpinned-event-loops`
// leaves them to the scheduler.

import CBenchSupport
import Foundation

enum ThreadPlacement {
    /// The CPUs of the calling and the answering side, or nil where there is one CPU.
    static var sides: (caller: Int, callee: Int)? {
        ProcessInfo.processInfo.activeProcessorCount >= 2 ? (0, 1) : nil
    }

    /// The kernel ids of this process's threads whose name starts with `prefix`.
    static func threads(named prefix: String) -> Set<Int32> {
        let ids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return Set(
            ids.compactMap { id -> Int32? in
                guard let name = try? String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8),
                    name.hasPrefix(prefix)
                else { return nil }
                return Int32(id)
            })
    }

    /// Runs `body` and returns what it made and the NIO event-loop threads it started.
    static func eventLoopThreads<Made>(startedBy body: () async throws -> Made) async rethrows -> (Made, Set<Int32>) {
        let before = threads(named: "NIO-ELT")
        let made = try await body()
        return (made, threads(named: "NIO-ELT").subtracting(before))
    }

    /// Lets `threads` run only on `cpu`, or anywhere when `cpu` is nil.
    static func place(_ threads: Set<Int32>, on cpu: Int?) throws(PlacementError) {
        guard !threads.isEmpty else { throw PlacementError(reason: "no event-loop thread found") }
        for thread in threads {
            let error = CBenchSupport_place_thread(thread, Int32(cpu ?? -1))
            guard error == 0 else {
                let target = cpu.map { "CPU \($0)" } ?? "the process's CPUs"
                let why =
                    error == EINVAL && cpu != nil ? "not a CPU this process may use" : String(cString: strerror(error))
                throw PlacementError(reason: "thread \(thread) on \(target): \(why)")
            }
        }
    }

    struct PlacementError: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }
}
