// troupe-batch-sweep: how the per-turn batch size (ActorSystem.Configuration.batchSize) trades
// turn overhead against fairness. A ring of 64 actors passes 2048 tokens 1000 hops each, so
// every actor always has a backlog and the batch size decides how often workers switch actors.
// Prints the best of 3 runs per batch size. Run: swift run --package-path Benchmarks -c release troupe-batch-sweep
import Troupe
import Dispatch
import Synchronization

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

final class Counter: Sendable { let remaining: Atomic<Int>; init(_ n: Int) { remaining = Atomic(n) } }

struct RingNode: ActorDefinition {
    enum Message: Sendable { case link(ActorRef<Message>), token(Int) }
    var next: ActorRef<Message>?
    let done: DispatchSemaphore
    let counter: Counter
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .link(let ref): next = ref
        case .token(0): if counter.remaining.subtract(1, ordering: .relaxed).newValue == 0 { done.signal() }
        case .token(let hops): next!.tell(.token(hops - 1))
        }
    }
}

func run(batch: Int) -> Double {
    let system = ActorSystem(configuration: .init(batchSize: batch))
    defer { system.shutdownBlocking() }
    let actors = 64, tokens = 2048, hops = 1000
    let done = DispatchSemaphore(value: 0)
    let counter = Counter(tokens)
    let ring = (0..<actors).map { _ in system.spawn(RingNode(done: done, counter: counter)) }
    for i in 0..<actors { ring[i].tell(.link(ring[(i + 1) % actors])) }
    let t = now()
    for k in 0..<tokens { ring[k % actors].tell(.token(hops)) }
    done.wait()
    return Double(tokens * hops) / (now() - t)
}

for batch in [1, 4, 16, 32, 64, 128, 256, 1024] {
    var best = 0.0
    for _ in 0..<3 { best = max(best, run(batch: batch)) }
    print("batch \(batch): ring of 64 actors, 2048 tokens: \(Int(best / 1e3)) k msg/s")
}
