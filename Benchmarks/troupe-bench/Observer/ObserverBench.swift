// `troupe-bench observer`: what TroupeObserver costs (issue 33). The process's CPU time with a
// page connected beside the same without one, on a system of idle actors (so that nothing but
// the observer's sampling differs), the time to answer one `/api/state` (the system's figures
// and the top 50) at 10^5 and 10^6 live actors, and the core's snapshots alone (every actor
// described, and the top-50 walk).

import ArgumentParser
import Foundation
import Troupe
import TroupeObserver

#if canImport(Glibc)
    import Glibc
#endif

struct ObserverBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "observer",
        abstract: "TroupeObserver's cost: CPU with a page connected, and one state document at 10^5 and 10^6 actors.",
        discussion: """
            Each row says what it measures. The CPU rows are the whole process's user+system time \
            (getrusage) over a window, as a share of one core: first with no page connected, then \
            with one page connected over a WebSocket (a client thread here reads its updates), on \
            a system whose actors are all idle, so the difference is the observer's sampling. The \
            document rows time GET /api/state?limit=50 over loopback (a snapshot of every live \
            actor, the top 50 by messages processed, the JSON), best of the requests made.
            """)

    @ParentCommand var parent: TroupeBench
    var quick: Bool { parent.quick }

    @Option(help: "Idle actors for the CPU rows (default 100,000; 10,000 with --quick).")
    var actors: Int?

    @Option(
        name: .customLong("top-actors"),
        help: "Actors for the large document row (default 1,000,000; 100,000 with --quick).")
    var topActors: Int?

    @Option(help: "Seconds per CPU window (default 10; 3 with --quick).")
    var seconds: Double?

    func run() throws {
        let actors = self.actors ?? (quick ? 10_000 : 100_000)
        let topActors = max(self.topActors ?? (quick ? 100_000 : 1_000_000), actors)
        let window = seconds ?? (quick ? 3 : 10)
        let system = ActorSystem(configuration: .init(name: "observer"))
        let observer = try blocking(on: nil) { try await system.serveObserver() }
        print("TroupeObserver (\(system.workerCount) workers; update interval 500 ms; idle actors)")
        print("row | measure | value")
        print("---|---|---")

        var refs = spawnIdle(actors, in: system)
        let idle = cpuShare(over: window)
        print("CPU, \(actors) actors, no page | share of one core | \(fixed(idle * 100, 2)) %")
        verify(observer.samplesTaken == 0, "observer: \(observer.samplesTaken) samples with no page connected")

        let page = try PageClient(port: observer.port, token: observer.token)
        let watched = cpuShare(over: window)
        let samples = observer.samplesTaken
        page.close()
        let documents = page.documents
        verify(documents >= 1, "observer: the page got no document")
        verify(samples >= Int(window / 0.5) - 1, "observer: \(samples) samples in \(window) s at 500 ms")
        print("CPU, \(actors) actors, one page | share of one core | \(fixed(watched * 100, 2)) %")
        print(
            "CPU, the observer's share (one page − no page) | share of one core | \(fixed(max(0, watched - idle) * 100, 2)) % (\(samples) samples, \(documents) documents sent)"
        )

        var full = Double.infinity
        for _ in 0..<3 {
            let started = ContinuousClock.now
            let snapshot = system.snapshot()
            let elapsed = ContinuousClock.now - started
            full = min(full, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            verify(snapshot.actors.count >= actors, "observer: a full snapshot of \(snapshot.actors.count) actors")
        }
        print("system.snapshot() (every actor described), \(actors) actors | best of 3 | \(fixed(full * 1_000, 1)) ms")
        let small = try documentTime(port: observer.port, token: observer.token, count: actors)
        print("GET /api/state?limit=50, \(actors) actors | best of 10 | \(fixed(small * 1_000, 1)) ms")
        refs += spawnIdle(topActors - actors, in: system)
        let large = try documentTime(port: observer.port, token: observer.token, count: topActors)
        print("GET /api/state?limit=50, \(topActors) actors | best of 10 | \(fixed(large * 1_000, 1)) ms")
        let walk = topWalkTime(system, actors: topActors, pauseMilliseconds: 100)
        print(
            "system.snapshot(topActors: 50), \(topActors) actors, 100 ms apart (as a page's updates come) | best of 10 | \(fixed(walk * 1_000, 1)) ms"
        )
        // An idle actor's cell is a 240-byte malloc chunk (`MemoryPerIdleActor`).
        let floor = strideReadTime(count: topActors, stride: 240)
        print(
            "memory floor: one word per 240 bytes over \(topActors) × 240 bytes (what the walk reads at least) | best of 10 | \(fixed(floor * 1_000, 1)) ms"
        )
        withExtendedLifetime(refs) {}
        _ = try? blocking(on: nil) {
            await observer.shutdown()
            await system.shutdown()
        }
    }

    /// The best of 10 walks for the top 50 of `actors` live actors, `pauseMilliseconds` apart (as a
    /// page's updates come, rather than back to back, where each walk finds the caches as the
    /// previous one left them).
    private func topWalkTime(_ system: ActorSystem, actors: Int, pauseMilliseconds: Int) -> Double {
        var best = Double.infinity
        for _ in 0..<10 {
            if pauseMilliseconds > 0 { usleep(UInt32(pauseMilliseconds * 1_000)) }
            let started = ContinuousClock.now
            let top = system.snapshot(topActors: 50, by: .messagesProcessed)
            let elapsed = ContinuousClock.now - started
            best = min(best, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            verify(top.actors.count == 50 && top.liveActorCount >= actors, "observer: the top 50 of \(actors)")
        }
        return best
    }

    /// The time to read one word of each of `count` blocks of `stride` bytes laid end to end:
    /// the least a walk over `count` actors of that size costs on this machine now (its memory
    /// bandwidth drifts with the VM's neighbours, by a third here), best of 10.
    private func strideReadTime(count: Int, stride: Int) -> Double {
        let words = count * stride / 8
        let memory = UnsafeMutablePointer<UInt64>.allocate(capacity: words)
        defer { memory.deallocate() }
        memory.initialize(repeating: 1, count: words)
        var best = Double.infinity
        var sum: UInt64 = 0
        for _ in 0..<10 {
            let started = ContinuousClock.now
            for index in Swift.stride(from: 0, to: words, by: stride / 8) { sum &+= memory[index] }
            let elapsed = ContinuousClock.now - started
            best = min(best, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        verify(sum == UInt64(10 * count), "observer: the floor read \(sum) words, not \(10 * count)")
        return best
    }

    /// `count` actors that have each handled one message (so they are idle, not newborn).
    private func spawnIdle(_ count: Int, in system: ActorSystem) -> [ActorRef<Int>] {
        let refs = (0..<count).map { _ in system.spawn(Idle()) }
        for ref in refs { ref.tell(1) }
        let last = refs.last
        while let last, !last.isMailboxEmpty { usleep(1000) }
        usleep(200_000)
        return refs
    }

    /// The process's CPU time over `seconds` of wall time, as a share of one core.
    private func cpuShare(over seconds: Double) -> Double {
        func cpu() -> Double {
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
                + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        }
        let clock = ContinuousClock()
        let started = clock.now
        let before = cpu()
        sleepSeconds(seconds)
        let elapsed = clock.now - started
        return (cpu() - before) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    /// The best of ten `/api/state?limit=50` round trips, in seconds; checks the actor count.
    private func documentTime(port: Int, token: String, count: Int) throws -> Double {
        var best = Double.infinity
        for _ in 0..<10 {
            let started = ContinuousClock.now
            let body = try httpGet(port: port, "/api/state?limit=50&token=\(token)")
            let elapsed = ContinuousClock.now - started
            best = min(best, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            let system = object?["system"] as? [String: Any]
            verify(
                (system?["actorCount"] as? Int ?? 0) >= count,
                "observer: the state listed \(system?["actorCount"] ?? "nothing") actors, expected \(count)")
            verify((object?["actors"] as? [Any])?.count == 50, "observer: the state did not list 50 actors")
        }
        return best
    }
}

/// An actor that takes a number and does nothing with it.
private struct Idle: ActorDefinition {
    mutating func receive(_ message: Int, context: ActorContext<Int>) {}
}

/// A blocking loopback connection (a few lines of POSIX: the bench needs no HTTP client).
private func connectLoopback(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
    let status = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard fd >= 0, status == 0 else { throw CocoaError(.fileReadUnknown) }
    return fd
}

private func sendAll(_ fd: Int32, _ text: String) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent > 0 else { return }
        offset += sent
    }
}

/// One `GET` with `Connection: close`; the body.
private func httpGet(port: Int, _ target: String) throws -> String {
    let fd = try connectLoopback(port: port)
    defer { close(fd) }
    sendAll(fd, "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let got = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard got > 0 else { break }
        bytes += chunk[0..<got]
    }
    let text = String(decoding: bytes, as: UTF8.self)
    guard text.hasPrefix("HTTP/1.1 200"), let range = text.range(of: "\r\n\r\n") else {
        throw CocoaError(.fileReadCorruptFile)
    }
    return String(text[range.upperBound...])
}

/// A page as the bench's client: the WebSocket upgrade, then a thread that reads frames and
/// counts the documents.
private final class PageClient: @unchecked Sendable {  // `documents` is atomic-free: read after `close` joins
    private let fd: Int32
    private var thread: Thread?
    private let done = DispatchSemaphore(value: 0)
    private(set) var documents = 0

    init(port: Int, token: String) throws {
        fd = try connectLoopback(port: port)
        sendAll(
            fd,
            "GET /ws?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let thread = Thread { [self] in
            readFrames()
            done.signal()
        }
        self.thread = thread
        thread.start()
    }

    private func readFrames() {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var upgraded = false
        while true {
            let got = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard got > 0 else { return }
            buffer += chunk[0..<got]
            if !upgraded {
                guard let end = findHeadEnd(buffer) else { continue }
                upgraded = true
                buffer.removeFirst(end)
            }
            while let length = frameLength(buffer), buffer.count >= length {
                if buffer[0] & 0x0f == 1 { documents += 1 }
                buffer.removeFirst(length)
            }
        }
    }

    private func findHeadEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index..<index + 4].elementsEqual([13, 10, 13, 10]) {
            return index + 4
        }
        return nil
    }

    /// The whole length of the first (unmasked, server) frame, once its header is in.
    private func frameLength(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        let short = Int(bytes[1] & 0x7f)
        switch short {
        case 126:
            guard bytes.count >= 4 else { return nil }
            return 4 + (Int(bytes[2]) << 8 | Int(bytes[3]))
        case 127:
            guard bytes.count >= 10 else { return nil }
            return 10 + bytes[2..<10].reduce(0) { $0 << 8 | Int($1) }
        default: return 2 + short
        }
    }

    /// Closes the connection and waits for the reading thread.
    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
        done.wait()
        Glibc.close(fd)
    }
}
