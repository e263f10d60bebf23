#if canImport(Glibc)
    import Glibc
#endif
import Synchronization

/// A `SerialExecutor` that runs its jobs on one thread of its own: the honest native baseline for
/// message passing. Two native actors on two of these cannot run on one thread, so an awaited
/// call between them is a real hand-over of a job to another thread and back, as a Troupe
/// message is. (On Swift's default executor an awaited call to an idle actor completes on the
/// caller's thread, with no message at all.)
///
/// Built like Troupe's workers, to be a fair opponent: an enqueue takes a mutex and signals only
/// a parked thread; the thread spins (polling an atomic count) for ~20 µs before it parks.
/// Jobs run in enqueue order. The thread lives as long as the process (benchmarks make a few).
final class ThreadExecutor: SerialExecutor, @unchecked Sendable {  // `jobs`/`parked` only under `mutex`
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [UnownedJob] = []
    private var parked = false
    private let pending = Atomic<Int>(0)

    init() {
        precondition(pthread_mutex_init(mutex, nil) == 0)
        precondition(pthread_cond_init(condition, nil) == 0)
        _ = startThread { [self] in run() }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        pthread_mutex_lock(mutex)
        jobs.append(unowned)
        pending.add(1, ordering: .releasing)
        let wake = parked
        pthread_mutex_unlock(mutex)
        if wake { pthread_cond_signal(condition) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    private func run() {
        var batch: [UnownedJob] = []
        while true {
            var spins = 0
            while pending.load(ordering: .acquiring) == 0 && spins < 20_000 { spins += 1 }
            pthread_mutex_lock(mutex)
            while jobs.isEmpty {
                parked = true
                pthread_cond_wait(condition, mutex)
                parked = false
            }
            swap(&batch, &jobs)
            pending.subtract(batch.count, ordering: .relaxed)
            pthread_mutex_unlock(mutex)
            for job in batch { job.runSynchronously(on: asUnownedSerialExecutor()) }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
