// NNKit's actor-model helpers on Troupe: multi-dispatch of a protocol's calls to observers held
// weakly (a download actor reports progress and completion to them), a polling actor driven by a
// periodic timer of its own that posts what it finds to interested actors, and a
// self-invalidating actor that closes its resource once the last reference to it is gone.

import ExampleSupport
import Synchronization
import Troupe
import TroupePromises
import TroupePubSub

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// MARK: Checks

// MARK: Multi-dispatch: download observers

/// The protocol every download observer conforms to: calls that return nothing.
protocol DownloadObserver: AnyObject, Sendable {
    func progress(_ file: String, fraction: Double)
    func finished(_ file: String, bytes: Int)
}

/// An observer that writes down what it is told (thread-safe: it is called on the dispatch actor).
final class ProgressLog: DownloadObserver {
    let name: String
    private let lines = Mutex<[String]>([])

    init(_ name: String) { self.name = name }

    func progress(_ file: String, fraction: Double) {
        lines.withLock { $0.append("\(file) \(Int(fraction * 100))%") }
    }
    func finished(_ file: String, bytes: Int) { lines.withLock { $0.append("\(file) done (\(bytes) bytes)") } }
    var all: [String] { lines.withLock { $0 } }
}

/// Where the dispatcher runs the observers' calls: an actor of ours, so that we can ask it when
/// every call dispatched before has run.
struct ObserverQueue: ActorDefinition {
    enum Message: Sendable {
        case run(DispatchJob)
        case flush(Reply<Void>)
    }

    func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .run(let job): job.run()
        case .flush(let reply): reply.succeed()
        }
    }
}

/// Downloads a file in chunks (simulated) and tells the observers how it goes.
struct Downloader: ActorDefinition {
    enum Message: Sendable {
        /// Starts a download; answered with the byte count once it is complete.
        case download(file: String, bytes: Int, Reply<Int>)
        /// The next chunk arrived (the actor sends it to itself).
        case chunk
    }

    struct Transfer {
        let file: String
        let total: Int
        var received: Int
        let reply: Reply<Int>
    }

    let observers: MultiDispatcher<any DownloadObserver>
    let chunkSize: Int
    var current: Transfer?

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .download(let file, let bytes, let reply):
            guard current == nil else {
                reply.fail(Busy())
                return
            }
            current = Transfer(file: file, total: bytes, received: 0, reply: reply)
            context.ref.tell(.chunk)
        case .chunk:
            guard var transfer = current else { return }
            transfer.received = min(transfer.total, transfer.received + chunkSize)
            let (file, received, total) = (transfer.file, transfer.received, transfer.total)
            observers.dispatch { $0.progress(file, fraction: Double(received) / Double(total)) }
            if received < total {
                current = transfer
                context.ref.tell(.chunk)
            } else {
                observers.dispatch { $0.finished(file, bytes: total) }
                current = nil
                transfer.reply.succeed(total)
            }
        }
    }

    struct Busy: Error {}
}

// MARK: Polling: a periodic timer and interested parties

/// What the poller finds.
struct DiskUsage: Sendable, CustomStringConvertible {
    let sequence: Int
    let percent: Int
    var description: String { "poll \(sequence): \(percent)% used" }
}

/// Something that can only be polled: each reading is one more percent.
final class DiskSensor: Sendable {
    private let used = Atomic<Int>(40)
    func read() -> Int { used.add(1, ordering: .relaxed).newValue }
}

struct PollerStatus: Sendable {
    let polls: Int
    let timerActive: Bool
}

/// Polls the sensor on a periodic timer and posts each reading to a topic.
struct DiskPoller: ActorDefinition {
    enum Message: Sendable {
        /// Polls every `interval`; an interval of zero or less polls once more and stops.
        case start(every: Duration)
        case stop
        case poll
        case status(Reply<PollerStatus>)
    }

    let sensor: DiskSensor
    let usage: Topic<DiskUsage>
    var polls = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .start(let interval):
            context.startPeriodicTimer(key: "poll", message: .poll, every: interval)
        case .stop:
            context.cancelTimer(key: "poll")
        case .poll:
            polls += 1
            usage.publish(DiskUsage(sequence: polls, percent: sensor.read()))
        case .status(let reply):
            reply.succeed(PollerStatus(polls: polls, timerActive: context.isTimerActive(key: "poll")))
        }
    }
}

/// An interested party: keeps the readings it was sent.
struct Dashboard: ActorDefinition {
    enum Message: Sendable {
        case usage(DiskUsage)
        case readings(Reply<[DiskUsage]>)
    }

    var readings: [DiskUsage] = []

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .usage(let reading): readings.append(reading)
        case .readings(let reply): reply.succeed(readings)
        }
    }
}

// MARK: Self-invalidation: cleanup once the last reference is gone

/// The files open right now, and how each one was closed.
final class OpenFiles: Sendable {
    private let state = Mutex<(open: Set<String>, closed: [String])>(([], []))
    func open(_ path: String) { state.withLock { _ = $0.open.insert(path) } }
    func close(_ path: String, how: String) {
        state.withLock {
            $0.open.remove(path)
            $0.closed.append("\(path): \(how)")
        }
    }
    var open: Set<String> { state.withLock { $0.open } }
    var closed: [String] { state.withLock { $0.closed } }
}

/// Writes lines to a (simulated) file that it opens when it starts and closes when it stops.
struct ReportWriter: ActorDefinition {
    enum Message: Sendable {
        case write(String)
        case lineCount(Reply<Int>)
        /// Closes the file now (NNKit's early `invalidate`).
        case close
    }

    let path: String
    let files: OpenFiles
    var lines: [String] = []

    func started(context: ActorContext<Message>) { files.open(path) }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .write(let line): lines.append(line)
        case .lineCount(let reply): reply.succeed(lines.count)
        case .close: context.stop()
        }
    }

    /// The cleanup: runs on the actor, once, whatever the reason it stops.
    func stopped(context: ActorContext<Message>) {
        let reason = context.terminationReason.map { "\($0)" } ?? "?"
        files.close(path, how: "flushed \(lines.count) line(s), \(reason)")
    }
}

/// Spawns a self-invalidating writer, uses it, and lets go of it by returning: the promise
/// completes when the writer has stopped.
func writeReport(_ system: ActorSystem, files: OpenFiles) async throws -> Promise<Terminated> {
    let writer = system.spawn(
        ReportWriter(path: "report.txt", files: files),
        options: SpawnOptions(name: "report-writer", selfInvalidating: true))
    let ended = Promise<Terminated>()
    writer.whenTerminated { ended.succeed($0) }
    writer.tell(.write("downloads: 2"))
    writer.tell(.write("polls: many"))
    let count = try await writer.ask { .lineCount($0) }
    print("wrote \(count) lines; open files: \(files.open.sorted())")
    check(count == 2 && files.open == ["report.txt"], "the writer holds its file open while it is used")
    return ended  // the last ref to the writer goes here
}

// MARK: The program

@main
struct NNKitObservers {
    static func main() async throws {
        let system = try ActorSystem.build { builder in try builder.plugin(PubSubPlugin()) }
        try await observers(system)
        try await polling(system)
        try await selfInvalidation(system)
        await system.shutdown()
        print("\nnnkit-observers: all checks passed")
    }

    static func observers(_ system: ActorSystem) async throws {
        step("Multi-dispatch: observers of a protocol, held weakly")
        let queue = system.spawn(ObserverQueue(), options: SpawnOptions(name: "observer-queue"))
        let observers = MultiDispatcher<any DownloadObserver>(target: .actor(queue) { .run($0) })
        let progressBar = ProgressLog("progress-bar")
        let statusLine = ProgressLog("status-line")
        observers.add(progressBar)
        observers.add(statusLine)
        observers.add(progressBar)  // no effect: already registered
        var transient: ProgressLog? = ProgressLog("transient")
        observers.add(transient!)
        print("observers registered: \(observers.observerCount)")
        check(observers.observerCount == 3, "three distinct observers are registered")
        transient = nil
        print("the transient observer was released (never removed): \(observers.observerCount) left")
        check(observers.observerCount == 2, "a released observer drops out by itself")

        step("A download reports its progress to every observer")
        let downloader = system.spawn(
            Downloader(observers: observers, chunkSize: 400), options: SpawnOptions(name: "downloader"))
        let bytes = try await downloader.ask { .download(file: "song.mp3", bytes: 1_000, $0) }
        // The calls were dispatched before the download answered; this ask runs after them.
        try await queue.ask { .flush($0) }
        print("download answered: \(bytes) bytes")
        for observer in [progressBar, statusLine] { print("  \(observer.name): \(observer.all)") }
        let expected = ["song.mp3 40%", "song.mp3 80%", "song.mp3 100%", "song.mp3 done (1000 bytes)"]
        check(progressBar.all == expected, "the progress bar saw every call in order (got \(progressBar.all))")
        check(statusLine.all == expected, "the status line saw the same calls")

        step("A removed observer is not called again")
        check(observers.remove(statusLine), "the status line was registered")
        _ = try await downloader.ask { .download(file: "video.mp4", bytes: 800, $0) }
        try await queue.ask { .flush($0) }
        print("  \(progressBar.name): \(progressBar.all.suffix(3))")
        print("  \(statusLine.name): \(statusLine.all.count) calls (unchanged)")
        check(progressBar.all.last == "video.mp4 done (800 bytes)", "the remaining observer heard the second download")
        check(statusLine.all == expected, "the removed observer heard nothing more")
        downloader.stop()
        queue.stop()
    }

    static func polling(_ system: ActorSystem) async throws {
        step("A polling actor: a periodic timer posts readings to interested parties")
        let usage = try system.pubSub().topic("disk-usage", of: DiskUsage.self)
        let dashboard = system.spawn(Dashboard(), options: SpawnOptions(name: "dashboard"))
        try usage.subscribe(dashboard) { .usage($0) }
        let poller = system.spawn(
            DiskPoller(sensor: DiskSensor(), usage: usage), options: SpawnOptions(name: "disk-poller"))
        poller.tell(.start(every: .milliseconds(20)))
        try await waitUntil("three polls") { try await poller.ask { .status($0) }.polls >= 3 }
        poller.tell(.stop)
        let stopped = try await poller.ask { .status($0) }
        print("stopped after \(stopped.polls) polls; timer active: \(stopped.timerActive)")
        check(!stopped.timerActive, "stopping cancels the timer")
        let seen = try await dashboard.ask { .readings($0) }
        for reading in seen { print("  dashboard got \(reading)") }
        check(seen.count == stopped.polls, "the dashboard got every reading posted before the stop")
        check(seen.map(\.sequence) == Array(1...stopped.polls), "in order")

        step("An interval of zero polls once more, then the timer ends by itself")
        poller.tell(.start(every: .zero))
        try await waitUntil("one more poll") { try await poller.ask { .status($0) }.polls == stopped.polls + 1 }
        let once = try await poller.ask { .status($0) }
        let after = try await dashboard.ask { .readings($0) }
        print("polls: \(once.polls); timer active: \(once.timerActive); last reading: \(after.last!)")
        check(!once.timerActive, "a zero interval leaves no timer running")
        check(after.count == once.polls, "the extra reading reached the dashboard")
        poller.stop()
        dashboard.stop()
    }

    static func selfInvalidation(_ system: ActorSystem) async throws {
        step("A self-invalidating actor cleans up once the last reference is gone")
        let files = OpenFiles()
        let ended = try await writeReport(system, files: files)
        let end = try await ended.get()
        print("\(end); open files: \(files.open.sorted()); closed: \(files.closed)")
        guard case .selfInvalidated = end.reason else { fail("expected a self-invalidation, got \(end.reason)") }
        check(files.open.isEmpty, "the cleanup closed the file")

        step("Invalidating early: the cleanup runs then, and only once")
        let early = system.spawn(
            ReportWriter(path: "early.txt", files: files),
            options: SpawnOptions(name: "early-writer", selfInvalidating: true))
        early.tell(.write("only line"))
        early.tell(.close)
        let earlyEnd = await early.terminated()
        print("\(earlyEnd); closed: \(files.closed)")
        guard case .stopped = earlyEnd.reason else { fail("expected an explicit stop, got \(earlyEnd.reason)") }
        check(files.closed.count == 2 && files.open.isEmpty, "each writer closed its file exactly once")
    }
}
