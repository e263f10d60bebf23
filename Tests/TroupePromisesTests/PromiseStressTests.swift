import Synchronization
import Testing
import TroupePromises
import TroupeTestSupport

/// Sums of what callbacks saw, to prove each ran exactly once.
final class Tally: Sendable {
    let count = Atomic<Int>(0)
    let sum = Atomic<Int>(0)
    let squares = Atomic<Int>(0)
    func add(_ value: Int) {
        count.add(1, ordering: .relaxed)
        sum.add(value, ordering: .relaxed)
        squares.add(value &* value, ordering: .relaxed)
    }
}

@Suite struct PromiseStressTests {
    /// 10^6 promises (10^5 under TSan), each with a chain registered before completion, two
    /// callbacks registered concurrently from two threads, and two threads racing to complete it:
    /// every callback runs exactly once and exactly one completion wins.
    @Test func promisesChainedAndCompletedFromManyThreads() async {
        let total = StressScale.scaled(1_000_000, minimum: 1_000)
        let batch = 10_000
        let early = Tally(), registeredA = Tally(), registeredB = Tally()
        let wins = Atomic<Int>(0), losses = Atomic<Int>(0)
        let doublesBefore = PromiseDiagnostics.doubleCompletions
        var start = 0
        while start < total {
            let count = min(batch, total - start)
            let base = start
            let roots = (0..<count).map { _ in Promise<Int>() }
            for (offset, root) in roots.enumerated() where offset % 2 == 0 {
                root.map { $0 + 1 }.flatMap { Promise(value: $0 - 1) }.then({ early.add($0) }, { _ in early.add(-1) })
            }
            await TestThreads.run(count: 4) { thread in
                switch thread {
                case 0:
                    for root in roots { root.whenComplete { registeredA.add(try! $0.get()) } }
                case 1:
                    for root in roots.reversed() {
                        root.map { $0 * 2 }.always {}.then({ registeredB.add($0) }, { _ in registeredB.add(-1) })
                    }
                default:
                    let order = thread == 2 ? Array(0..<count) : Array((0..<count).reversed())
                    for offset in order {
                        if roots[offset].succeed(base + offset) {
                            wins.add(1, ordering: .relaxed)
                        } else {
                            losses.add(1, ordering: .relaxed)
                        }
                    }
                }
            }
            start += count
        }
        let sum = (0..<total).reduce(0, +)
        let squares = (0..<total).reduce(0) { $0 + $1 * $1 }
        let evens = stride(from: 0, to: total, by: 1).filter { ($0 % batch) % 2 == 0 }
        #expect(wins.load(ordering: .relaxed) == total)
        #expect(losses.load(ordering: .relaxed) == total)
        #expect(PromiseDiagnostics.doubleCompletions - doublesBefore >= total)
        #expect(registeredA.count.load(ordering: .relaxed) == total)
        #expect(registeredA.sum.load(ordering: .relaxed) == sum)
        #expect(registeredA.squares.load(ordering: .relaxed) == squares)
        #expect(registeredB.count.load(ordering: .relaxed) == total)
        #expect(registeredB.sum.load(ordering: .relaxed) == 2 * sum)
        #expect(early.count.load(ordering: .relaxed) == evens.count)
        #expect(early.sum.load(ordering: .relaxed) == evens.reduce(0, +))
        #expect(early.squares.load(ordering: .relaxed) == evens.reduce(0) { $0 + $1 * $1 })
    }

    /// Many threads racing `all`, `any` and `race` inputs to completion.
    @Test func combinatorsUnderConcurrentCompletion() async {
        let rounds = StressScale.scaled(2_000, minimum: 100)
        for _ in 0..<rounds / 100 {
            let groups = (0..<100).map { _ in (0..<8).map { _ in Promise<Int>() } }
            let alls = groups.map { Promise.all($0) }
            let anys = groups.map { Promise.any($0) }
            let races = groups.map { Promise.race($0) }
            await TestThreads.run(count: 4) { thread in
                for group in groups {
                    for index in stride(from: thread, to: 8, by: 4) { group[index].succeed(index) }
                }
            }
            for index in 0..<100 {
                #expect(alls[index].currentOutcome?.success == Array(0..<8))
                #expect(anys[index].currentOutcome?.success != nil)
                #expect(races[index].currentOutcome?.success != nil)
            }
        }
    }
}
