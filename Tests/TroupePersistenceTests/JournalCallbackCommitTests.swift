import Foundation
import Testing
import TroupePersistence
internal import TroupeLocks

/// A journal hands a ``CallbackCommittingStore`` its batches without a task, and the store's
/// completion runs the loop on; when the store calls back before returning, the loop stays in
/// the frame that called it.
@Suite struct JournalCallbackCommitTests {
    /// 2,000 claims, each submitted by the previous one's completion, to a store that calls back
    /// before returning: every one is answered, in order, one batch each, and the stack is as
    /// deep at the last completion as at the first (counted in frames, which AddressSanitizer's
    /// heap-allocated frames do not change; the loop recursing per batch adds frames per batch,
    /// and 20,000 claims overflow it).
    @Test func aStoreThatCallsBackBeforeReturningRunsTheLoopInPlace() async throws {
        let journal = Journal(store: HangingCallbackStore(hangs: 0))
        let count = 2_000
        let seen = Locked<(answered: Int, wrong: [String], firstDepth: Int, deepest: Int)>((0, [], 0, 0))
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            @Sendable func claim(_ number: Int) {
                journal.submit(.claimWriter(PersistenceID("claim-\(number)"))) { result in
                    let depth = stackDepth()
                    seen.withLock { seen in
                        if number == 0 { seen.firstDepth = depth }
                        seen.deepest = max(seen.deepest, depth)
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
        #expect(deepest - firstDepth < 8, "the stack grew from \(firstDepth) to \(deepest) frames")
        #expect(journal.statistics.batches == count)
        await journal.shutdown()
    }
}

/// The number of frames on the calling thread's stack.
private func stackDepth() -> Int { Thread.callStackReturnAddresses.count }
