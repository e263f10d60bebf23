import Logging
import Troupe

/// A small actor system for tests: 2 unpinned workers (many tests run in parallel on a
/// 2-core machine), a quiet logger, and explicit values for everything a test may tune.
public func makeTestSystem(
    name: String = "test",
    workers: Int = 2,
    batchSize: Int = 64,
    askTimeout: Duration = .seconds(30),
    failureDecider: @escaping FailureDecider = { _ in .stop },
    logger: Logger = quietLogger,
    introspection: ActorSystem.Introspection = .init()
) -> ActorSystem {
    ActorSystem(
        configuration: .init(
            name: name,
            workerCount: workers,
            pinWorkers: false,
            batchSize: batchSize,
            askTimeout: askTimeout,
            failureDecider: failureDecider,
            logger: logger,
            introspection: introspection
        ))
}

/// Runs `body` with a fresh test system and shuts the system down afterwards, also when
/// `body` throws.
public func withTestSystem(
    name: String = "test",
    workers: Int = 2,
    batchSize: Int = 64,
    askTimeout: Duration = .seconds(30),
    failureDecider: @escaping FailureDecider = { _ in .stop },
    logger: Logger = quietLogger,
    introspection: ActorSystem.Introspection = .init(),
    _ body: (ActorSystem) async throws -> Void
) async throws {
    let system = makeTestSystem(
        name: name, workers: workers, batchSize: batchSize, askTimeout: askTimeout,
        failureDecider: failureDecider, logger: logger, introspection: introspection)
    do {
        try await body(system)
    } catch {
        await system.shutdown()
        throw error
    }
    await system.shutdown()
}

/// A logger that discards everything (failure tests would otherwise print stack of warnings).
public let quietLogger = Logger(label: "troupe-test", factory: { _ in SwiftLogNoOpLogHandler() })

/// A logger that keeps every message, for tests that check what the runtime logs.
public func recordingLogger(into recorder: Recorder<LogRecord>, level: Logger.Level = .trace) -> Logger {
    Logger(label: "troupe-test", factory: { _ in RecordingLogHandler(recorder: recorder, logLevel: level) })
}

public struct LogRecord: Sendable {
    public let level: Logger.Level
    public let message: String
    /// The handler's and the record's metadata, merged.
    public let metadata: Logger.Metadata
}

private struct RecordingLogHandler: LogHandler {
    let recorder: Recorder<LogRecord>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        recorder.append(LogRecord(level: event.level, message: "\(event.message)", metadata: merged))
    }
}
