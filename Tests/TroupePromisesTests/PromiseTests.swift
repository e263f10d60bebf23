import Synchronization
import Testing
import Troupe
import TroupePromises
import TroupeTestSupport

struct Boom: Error, Equatable { var code = 1 }

/// Counts calls and keeps the values, from any thread.
final class Calls<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func record(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
    var count: Int { all.count }
}

func isBoom(_ error: (any Error)?, _ code: Int = 1) -> Bool { (error as? Boom)?.code == code }

extension Result {
    var failure: Failure? { if case .failure(let error) = self { return error }; return nil }
    var success: Success? { if case .success(let value) = self { return value }; return nil }
}

@Suite struct CompletionTests {
    @Test func callbacksBeforeAndAfterCompletionRunOnceInOrder() {
        let promise = Promise<Int>()
        let calls = Calls<String>()
        promise.whenComplete { calls.record("a\(try! $0.get())") }
        promise.whenComplete { calls.record("b\(try! $0.get())") }
        #expect(calls.count == 0 && !promise.isCompleted && promise.currentOutcome == nil)
        #expect(promise.succeed(7))
        #expect(calls.all == ["a7", "b7"])
        promise.whenComplete { calls.record("c\(try! $0.get())") }
        #expect(calls.all == ["a7", "b7", "c7"])
        #expect(promise.isCompleted && promise.currentOutcome?.success == 7)
    }

    @Test func secondCompletionIsReportedNotIgnored() {
        let events = Calls<PromiseEvent>()
        let token = PromiseDiagnostics.addObserver { event in
            if case .doubleCompletion(let type) = event, type == "UInt16" { events.record(event) }
        }
        defer { token.cancel() }
        let before = PromiseDiagnostics.doubleCompletions
        let promise = Promise<UInt16>()
        let calls = Calls<UInt16>()
        promise.then({ calls.record($0) }, { _ in calls.record(0) })
        #expect(promise.succeed(1))
        #expect(!promise.succeed(2))
        #expect(!promise.fail(Boom()))
        #expect(!promise.complete(with: { 3 }))
        #expect(calls.all == [1])
        #expect(promise.currentOutcome?.success == 1)
        #expect(PromiseDiagnostics.doubleCompletions >= before + 3)
        #expect(events.count == 3)
        token.cancel()
        #expect(token.isCancelled)
        #expect(!promise.succeed(4))
        #expect(events.count == 3)  // cancelled: the fourth double completion is not observed
    }

    @Test func failureReachesFailureBranchOnly() {
        let promise = Promise<Int>()
        let calls = Calls<String>()
        promise.then({ _ in calls.record("success") }, { calls.record(isBoom($0, 4) ? "boom" : "other") })
        promise.fail(Boom(code: 4))
        #expect(calls.all == ["boom"])
        #expect(promise.complete(with: { 1 }) == false)
    }

    @Test func completeWithThrowingBodyFails() {
        let promise = Promise<Int>()
        #expect(promise.complete(with: { throw Boom(code: 2) }))
        #expect(isBoom(promise.currentOutcome?.failure, 2))
    }

    @Test func alreadyCompletedConstructors() {
        #expect(Promise(value: 3).currentOutcome?.success == 3)
        #expect(isBoom(Promise<Int>(error: Boom()).currentOutcome?.failure))
        #expect(Promise<Int>.completed(.success(5)).currentOutcome?.success == 5)
        #expect(!Promise(value: 3).succeed(4))
    }

    @Test func releasedPendingPromiseFailsItsCallbacksWithAbandoned() {
        let calls = Calls<Bool>()
        let before = PromiseDiagnostics.abandoned
        var downstream: Promise<Int>?
        do {
            let promise = Promise<Int>()
            promise.whenComplete { outcome in
                if case .failure(PromiseError.abandoned) = outcome { calls.record(true) } else { calls.record(false) }
            }
            downstream = promise.map { $0 + 1 }
        }
        #expect(calls.all == [true])
        #expect(PromiseDiagnostics.abandoned >= before + 1)
        guard case .failure(PromiseError.abandoned) = downstream!.currentOutcome else {
            Issue.record("downstream should fail with .abandoned"); return
        }
    }
}

@Suite struct CombinatorTests {
    @Test func mapAndFlatMap() {
        let source = Promise<Int>()
        let mapped = source.map { "v\($0)" }
        let flat = source.flatMap { value in Promise(value: value * 10) }
        let pendingInner = Promise<Int>()
        let flatLater = source.flatMap { _ in pendingInner }
        source.succeed(4)
        #expect(mapped.currentOutcome?.success == "v4")
        #expect(flat.currentOutcome?.success == 40)
        #expect(!flatLater.isCompleted)
        pendingInner.succeed(9)
        #expect(flatLater.currentOutcome?.success == 9)
    }

    @Test func throwingTransformsFail() {
        let source = Promise(value: 1)
        #expect(isBoom(source.map { _ -> Int in throw Boom(code: 5) }.currentOutcome?.failure, 5))
        #expect(isBoom(source.flatMap { _ -> Promise<Int> in throw Boom(code: 6) }.currentOutcome?.failure, 6))
    }

    @Test func failuresPassThroughMapAndFlatMap() {
        let calls = Calls<Int>()
        let failed = Promise<Int>(error: Boom(code: 3))
        let mapped = failed.map { value -> Int in
            calls.record(value); return value
        }
        let flat = failed.flatMap { value -> Promise<Int> in
            calls.record(value); return Promise(value: value)
        }
        #expect(isBoom(mapped.currentOutcome?.failure, 3) && isBoom(flat.currentOutcome?.failure, 3))
        #expect(calls.count == 0)
    }

    @Test func recoverReplacesFailuresOnly() {
        #expect(Promise<Int>(error: Boom()).recover { _ in 8 }.currentOutcome?.success == 8)
        #expect(Promise(value: 1).recover { _ in 8 }.currentOutcome?.success == 1)
        #expect(
            isBoom(Promise<Int>(error: Boom()).recover { _ -> Int in throw Boom(code: 2) }.currentOutcome?.failure, 2))
        #expect(Promise<Int>(error: Boom()).recover(with: { _ in Promise(value: 9) }).currentOutcome?.success == 9)
        #expect(Promise(value: 1).recover(with: { _ in Promise(value: 9) }).currentOutcome?.success == 1)
        #expect(
            isBoom(Promise<Int>(error: Boom()).recover(with: { _ in throw Boom(code: 3) }).currentOutcome?.failure, 3))
    }

    @Test func catchAndAlways() {
        let calls = Calls<String>()
        let failing = Promise<Int>()
        let same = failing.catch { calls.record("catch \(isBoom($0))") }.always { calls.record("always") }
        #expect(same === failing)
        failing.fail(Boom())
        Promise(value: 1).catch { _ in calls.record("wrong") }.always { calls.record("always2") }
        #expect(calls.all == ["catch true", "always", "always2"])
    }

    @Test func allCollectsInInputOrder() {
        let inputs = (0..<5).map { _ in Promise<Int>() }
        let all = Promise.all(inputs)
        for index in [3, 1, 4, 0] { inputs[index].succeed(index) }
        #expect(!all.isCompleted)
        inputs[2].succeed(2)
        #expect(all.currentOutcome?.success == [0, 1, 2, 3, 4])
    }

    @Test func allFailsWithFirstFailureAndEmptySucceeds() {
        let inputs = (0..<3).map { _ in Promise<Int>() }
        let all = Promise.all(inputs)
        inputs[0].succeed(0)
        inputs[2].fail(Boom(code: 2))
        inputs[1].fail(Boom(code: 1))
        #expect(isBoom(all.currentOutcome?.failure, 2))
        #expect(Promise<Int>.all([]).currentOutcome?.success == [])
    }

    @Test func anyTakesFirstSuccess() {
        let inputs = (0..<3).map { _ in Promise<Int>() }
        let any = Promise.any(inputs)
        inputs[0].fail(Boom())
        #expect(!any.isCompleted)
        inputs[2].succeed(2)
        inputs[1].succeed(1)
        #expect(any.currentOutcome?.success == 2)
    }

    @Test func anyFailsWhenAllFailOrEmpty() {
        let inputs = (0..<2).map { _ in Promise<Int>() }
        let any = Promise.any(inputs)
        inputs[1].fail(Boom(code: 1))
        inputs[0].fail(Boom(code: 0))
        guard case .failure(PromiseError.allFailed(let errors)) = any.currentOutcome else {
            Issue.record("expected allFailed"); return
        }
        #expect(errors.count == 2 && isBoom(errors[0], 0) && isBoom(errors[1], 1))
        guard case .failure(PromiseError.noInput) = Promise<Int>.any([]).currentOutcome else {
            Issue.record("expected noInput"); return
        }
    }

    @Test func raceTakesFirstOutcome() {
        let inputs = (0..<3).map { _ in Promise<Int>() }
        let race = Promise.race(inputs)
        inputs[1].fail(Boom(code: 7))
        inputs[0].succeed(0)
        #expect(isBoom(race.currentOutcome?.failure, 7))
        guard case .failure(PromiseError.noInput) = Promise<Int>.race([]).currentOutcome else {
            Issue.record("expected noInput"); return
        }
    }

    @Test func combinatorsDoNotReportExpectedRaceLosses() {
        let before = PromiseDiagnostics.doubleCompletions
        let inputs = (0..<50).map { _ in Promise<Int>() }
        let race = Promise.race(inputs)
        let any = Promise.any(inputs)
        for (index, input) in inputs.enumerated() { input.succeed(index) }
        #expect(race.currentOutcome?.success == 0 && any.currentOutcome?.success == 0)
        // Other suites may report concurrently, but not 98 times.
        #expect(PromiseDiagnostics.doubleCompletions - before < 98)
    }
}

@Suite struct TimeoutTests {
    @Test func timeoutFiresWhenPending() async {
        let pending = Promise<Int>()
        let limited = pending.timeout(after: .milliseconds(20))
        let outcome = await limited.outcome
        guard case .failure(PromiseError.timedOut(let after)) = outcome else {
            Issue.record("expected timedOut, got \(outcome)"); return
        }
        #expect(after == .milliseconds(20))
        #expect(pending.succeed(1))  // the source is not cancelled and can still complete
    }

    @Test func completionBeforeTimeoutWins() async throws {
        let pending = Promise<Int>()
        let limited = pending.timeout(after: .seconds(30))
        pending.succeed(3)
        #expect(try await limited.get() == 3)
        #expect(Promise(value: 4).timeout(after: .seconds(1)).currentOutcome?.success == 4)
    }

    @Test func timeoutOfAbandonedSourceReportsAbandonment() async {
        let outcome = await Promise<Int>().timeout(after: .seconds(30)).outcome
        guard case .failure(PromiseError.abandoned) = outcome else {
            Issue.record("expected abandoned, got \(outcome)"); return
        }
    }

    @Test func zeroOrNegativeTimeoutFailsAtOnce() {
        for duration in [Duration.zero, .seconds(-1)] {
            guard case .failure(PromiseError.timedOut) = Promise<Int>().timeout(after: duration).currentOutcome else {
                Issue.record("expected immediate timedOut for \(duration)"); continue
            }
        }
    }

    @Test func deadlines() async throws {
        guard case .failure(PromiseError.deadlinePassed) = Promise<Int>().deadline(.now - .seconds(1)).currentOutcome
        else {
            Issue.record("expected deadlinePassed"); return
        }
        let source = Promise<Int>()  // kept alive: a released source would fail with .abandoned
        let outcome = await source.deadline(.now + .milliseconds(10)).outcome
        withExtendedLifetime(source) {}
        guard case .failure(PromiseError.deadlinePassed) = outcome else {
            Issue.record("expected deadlinePassed, got \(outcome)"); return
        }
        let pending = Promise<Int>()
        let limited = pending.deadline(.now + .seconds(30))
        pending.succeed(1)
        #expect(try await limited.value == 1)
    }
}

@Suite struct AsyncBridgeTests {
    @Test func awaitValueAndGet() async throws {
        let promise = Promise<Int>()
        Task { promise.succeed(11) }
        #expect(try await promise.value == 11)
        #expect(try await promise.get() == 11)
        #expect(await promise.outcome.success == 11)
    }

    @Test func getThrowsThePromiseError() async {
        let promise = Promise<Int>()
        TestThreads.detach { promise.fail(Boom(code: 9)) }
        await #expect(throws: Boom(code: 9)) { try await promise.get() }
    }

    @Test func promiseFromAsyncFunction() async throws {
        @Sendable func slowDouble(_ value: Int) async throws -> Int {
            try await Task.sleep(for: .milliseconds(5))
            return value * 2
        }
        #expect(try await Promise { try await slowDouble(21) }.get() == 42)
        await #expect(throws: Boom(code: 3)) {
            try await Promise<Int> { throw Boom(code: 3) }.get()
        }
    }
}
