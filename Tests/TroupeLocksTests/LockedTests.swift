#if canImport(Glibc)
    import Glibc
#endif
import Testing
import TroupeLocks
import TroupeTestSupport

/// `Locked`, the one lock of Troupe and its optional modules: mutual exclusion, typed throws
/// through `withLock` (the lock released on the way out), copies sharing one value, and the
/// debug build's refusal of reentrant use.
@Suite struct LockedTests {
    @Test func fourThreadsIncrementingAHundredThousandTimesEachGiveTheExactTotal() async {
        let counter = Locked(0)
        await TestThreads.run(count: 4) { _ in
            for _ in 0..<100_000 { counter.withLock { $0 += 1 } }
        }
        #expect(counter.withLock { $0 } == 400_000)
    }

    @Test func aBodyRunsAloneEvenWhenItTakesItsTime() async {
        // Each body reads, yields the processor, then writes: without exclusion, increments
        // made meanwhile by other threads would be overwritten.
        let state = Locked((value: 0, inside: 0, overlaps: 0))
        await TestThreads.run(count: 4) { _ in
            for _ in 0..<500 {
                state.withLock { state in
                    state.inside += 1
                    if state.inside > 1 { state.overlaps += 1 }
                    let read = state.value
                    sched_yield()
                    state.value = read + 1
                    state.inside -= 1
                }
            }
        }
        let final = state.withLock { $0 }
        #expect(final.value == 2000)
        #expect(final.overlaps == 0)
    }

    @Test func aTypedErrorPassesThroughWithLockAndTheLockIsReleased() {
        let locked = Locked([Int]())
        do throws(Refusal) {
            try locked.withLock { (values: inout [Int]) throws(Refusal) in
                values.append(1)
                throw Refusal(code: 7)
            }
            Issue.record("withLock returned instead of throwing")
        } catch {
            #expect(error == Refusal(code: 7))  // `error` is a Refusal: the type survived
        }
        // The lock was released on the way out: this would hang (or trap in debug) otherwise.
        let values = locked.withLock { values in
            values.append(2)
            return values
        }
        #expect(values == [1, 2], "the change made before the throw was kept")
    }

    @Test func withLockReturnsTheBodysResult() {
        let locked = Locked("troupe")
        let count: Int = locked.withLock { $0.count }  // a non-throwing body needs no `try`
        #expect(count == 6)
    }

    @Test func copiesOfALockedShareOneValue() async {
        let original = Locked([String]())
        let copy = original
        copy.withLock { $0.append("from the copy") }
        original.withLock { $0.append("from the original") }
        await TestThreads.run(count: 2) { index in
            let mine = index == 0 ? original : copy
            mine.withLock { $0.append("thread \(index)") }
        }
        let seen = original.withLock { $0 }
        #expect(seen.prefix(2) == ["from the copy", "from the original"])
        #expect(Set(seen.dropFirst(2)) == ["thread 0", "thread 1"])
        #expect(copy.withLock { $0 } == seen)
    }

    @Test func theValueIsReleasedWithTheLastCopy() {
        weak var released: Tracked?
        do {
            let tracked = Tracked()
            released = tracked
            let locked = Locked(tracked)
            let copy = locked
            #expect(copy.withLock { $0 } === tracked)
        }
        #expect(released == nil)
    }

    #if DEBUG
        /// Debug builds use an error-checking mutex: a second `withLock` on the thread that holds
        /// the lock traps with a message instead of hanging.
        @Test func reentrantUseTrapsWithAMessageInDebugBuilds() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let locked = Locked(0)
                locked.withLock { _ in
                    locked.withLock { $0 += 1 }
                }
                exit(0)  // reached only if the reentrant call went through
            }
            let standardError = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(
                standardError.contains("Locked.withLock called again on the thread that holds the lock (not reentrant)")
            )
        }
    #endif
}

private struct Refusal: Error, Equatable {
    let code: Int
}

private final class Tracked: Sendable {}
