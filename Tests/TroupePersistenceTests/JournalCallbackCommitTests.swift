import Testing
import TroupePersistence
internal import TroupeLocks

/// A journal hands a ``CallbackCommittingStore`` its batches without a task, and the store's
/// completion runs the loop on; when the store calls back before returning, the loop stays in
/// the frame that called it.
@Suite struct JournalCallbackCommitTests {
    /// 2,000 claims, each submitted by the previous one's completion, to a store that calls back
    /// before returning: every one is answered, in order, one batch each, and the stack is as
    /// deep at the last completion as at the first (a frame per batch would have grown it by
    /// hundreds of kilobytes; 20,000 overflow it).
    @Test func aStoreThatCallsBackBeforeReturningRunsTheLoopInPlace() async throws {
        let journal = Journal(store: HangingCallbackStore(hangs: 0))
        let count = 2_000
        let seen = Locked<(answered: Int, wrong: [String], firstDepth: UInt, deepest: UInt)>((0, [], 0, 0))
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            @Sendable func claim(_ number: Int) {
                journal.submit(.claimWriter(PersistenceID("claim-\(number)"))) { result in
                    var marker = 0
                    let depth = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
                    seen.withLock { seen in
                        if number == 0 { seen.firstDepth = depth }
                        seen.deepest = min(seen.deepest == 0 ? depth : seen.deepest, depth)
                        if seen.answered != number {
                            seen.wrong.append("claim \(number) answered as #\(seen.answered)")
                        }
                        if case .success(.claimed(_, lastSequenceNumber: 0)) = result {
                        } else {
                            seen.wrong.append("claim \(number): \(result)")
                        }
                        seen.answered += 1
                    }
                    if number + 1 < count { claim(number + 1) } else { done.resume() }
                }
            }
            claim(0)
        }
        let (answered, wrong, firstDepth, deepest) = seen.withLock {
            ($0.answered, $0.wrong, $0.firstDepth, $0.deepest)
        }
        #expect(answered == count)
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
        // The stack grows down: the deepest completion has the lowest address.
        #expect(firstDepth - deepest < 16 * 1_024, "the stack grew by \(firstDepth - deepest) bytes")
        #expect(journal.statistics.batches == count)
        await journal.shutdown()
    }
}
