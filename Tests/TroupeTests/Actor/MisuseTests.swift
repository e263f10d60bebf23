import Foundation
import Testing
import Troupe
import TroupeTestSupport

/// A misused API fails fast, where the misuse happens, with a message that says what to do, in
/// release builds too (`fatalError`, whose message survives `-O`, where `precondition`'s does
/// not). Each case runs in a child process (an exit test) whose standard error is checked.
@Suite(.serialized) struct MisuseTests {
    struct Twice: HandlerActor {
        struct Ping: Sendable {}
        func setup(_ on: inout MessageHandlers<Twice>) {
            on.void(Ping.self) { _, _, _ in }
            on.result(Ping.self) { _, _, _ in 1 }
        }
    }

    static func standardError(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    @Test func aDuplicateHandlerIsReportedAtSpawn() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let system = ActorSystem(configuration: .init(workerCount: 1, pinWorkers: false))
            _ = system.spawn(Twice())
            // Reached only when spawn let the misuse through (it used to trap later, on a worker).
            exit(0)
        }
        #expect(
            Self.standardError(result).contains(
                "registers more than one handler for Ping; register exactly one handler per message type"))
    }

    @Test func aZeroCapacityBoundedMailboxIsReportedAtSpawn() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let system = ActorSystem(configuration: .init(workerCount: 1, pinWorkers: false))
            _ = system.spawn(Probe<Int>(), options: SpawnOptions(mailbox: .bounded(capacity: 0, overflow: .fail)))
        }
        #expect(Self.standardError(result).contains("needs a capacity of at least 1; use .unbounded for no limit"))
    }

    @Test func zeroWorkersIsReported() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ActorSystem(configuration: .init(workerCount: 0))
        }
        #expect(
            Self.standardError(result).contains(
                "workerCount must be at least 1, got 0; pass nil for one worker per allowed CPU"))
    }

    @Test func shutdownBlockingInsideAHandlerIsReported() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let system = ActorSystem(configuration: .init(workerCount: 1, pinWorkers: false))
            struct ShutsDown: ActorDefinition {
                func receive(_ message: Int, context: ActorContext<Int>) { context.system.shutdownBlocking() }
            }
            system.spawn(ShutsDown()).tell(1)
            sleep(10)
        }
        #expect(Self.standardError(result).contains("shutdownBlocking() called on a Troupe worker thread"))
    }

    /// Debug builds check the context's contract: only the handler it was given to may use it.
    @Test func aContextUsedOutsideItsTurnIsReportedInDebugBuilds() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let system = ActorSystem(configuration: .init(workerCount: 1, pinWorkers: false))
            system.spawn(ContextSmuggler()).tell(1)
            while ContextSmuggler.smuggled == nil { usleep(1000) }
            ContextSmuggler.smuggled?.stop()  // from the test's thread, outside any turn
            exit(0)
        }
        #expect(Self.standardError(result).contains("ActorContext.stop() used outside"))
    }
}

/// Keeps its context past the handler: the misuse ``MisuseTests`` checks.
struct ContextSmuggler: ActorDefinition {
    /// Written once by the handler, read by the test's thread after it polled for it.
    nonisolated(unsafe) static var smuggled: ActorContext<Int>?  // the misuse under test
    func receive(_ message: Int, context: ActorContext<Int>) { Self.smuggled = context }
}
