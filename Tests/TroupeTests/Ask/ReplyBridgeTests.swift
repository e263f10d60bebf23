import Testing
import Troupe
import TroupeTestSupport

/// `Reply(onCompletion:)`: a reply made outside any ask, whose outcome goes to a closure.
@Suite struct ReplyBridgeTests {
    @Test func theOutcomeReachesTheClosureOnceWhetherAnsweredFailedOrDropped() async throws {
        let outcomes = Recorder<String>()
        let answered = Reply<Int> { outcomes.append("\($0)") }
        #expect(answered.succeed(7))
        #expect(!answered.succeed(8), "a second answer is refused")
        #expect(answered.isCompleted)

        struct Refused: Error {}
        let failed = Reply<Int> { result in
            if case .failure(.failed(let error)) = result, error is Refused { outcomes.append("failed") }
        }
        failed.fail(Refused())

        do {
            _ = Reply<Int> { result in
                if case .failure(.noReply) = result { outcomes.append("dropped") }
            }
        }
        #expect(outcomes.values == ["success(7)", "failed", "dropped"])
    }

    @Test func anActorAnswersItAsItsOwnAsk() async throws {
        try await withTestSystem { system in
            let counter = system.spawn(Counter())
            counter.tell(.add(1))
            let answer = AsyncStream<Int>.makeStream()
            counter.tell(
                .get(
                    Reply { result in
                        if case .success(let value) = result { answer.continuation.yield(value) }
                        answer.continuation.finish()
                    }))
            var iterator = answer.stream.makeAsyncIterator()
            #expect(await iterator.next() == 1)
        }
    }
}
