#if canImport(Glibc)
    import Glibc
#endif
import Testing
import Troupe
import TroupeTestSupport

/// An actor system, with its scheduler, timer, hooks and locks, is freed once it has shut
/// down and the last user reference is gone: a reference cycle would leak one system per
/// tenant in a server, and one per test here.
@Suite struct SystemLifetimeTests {
    final class Canary: Sendable {
        let freed: Recorder<Bool>
        init(_ freed: Recorder<Bool>) { self.freed = freed }
        deinit { freed.append(true) }
    }

    /// Uses a system the way users do (actors, asks, timers, watches, hooks, dead letters) and
    /// returns a weak reference to it after shutdown.
    func usedAndShutDown() async throws -> (weak: WeakBox<ActorSystem>, actors: [WeakBox<AnyObject>]) {
        let system = makeTestSystem()
        system.hooks.onActorStopped { _ in }
        system.deadLetters.observe { _ in }
        let counter = system.spawn(Probe<Int>())
        counter.tell(1)
        let echo = system.spawn(
            options: SpawnOptions(name: "echo", mailbox: .bounded(capacity: 4, overflow: .dropOldest))
        ) { Echo() }
        #expect(try await echo.ask { .echo(7, $0) } == 7)
        counter.whenTerminated { _ in }
        counter.stop()
        _ = await counter.terminated()
        let box = WeakBox(system)
        await system.shutdown()
        return (box, [])
    }

    @Test func aSystemIsFreedAfterShutdown() async throws {
        let (weak, _) = try await usedAndShutDown()
        await waitUntil("the system is freed") { weak.value == nil }
        #expect(weak.value == nil, "a reference cycle keeps the ActorSystem alive after shutdown")
    }

    /// Observers that capture their system (the usual way to write one) used to keep it alive
    /// forever: system → hooks → observer → system.
    @Test func aSystemWhoseObserversCaptureItIsFreedAfterShutdown() async throws {
        let weak = await shutDownSystemWithCapturingObservers()
        await waitUntil("the system is freed") { weak.value == nil }
        #expect(weak.value == nil, "an observer's capture keeps the ActorSystem alive after shutdown")
    }

    func shutDownSystemWithCapturingObservers() async -> WeakBox<ActorSystem> {
        let system = makeTestSystem()
        system.hooks.onActorStopped { _ in _ = system.liveActorCount }
        system.hooks.onActorFailed { _, _ in _ = system.workerCount }
        system.deadLetters.observe { _ in _ = system.deadLetters.total }
        let probe = system.spawn(Probe<Int>())
        probe.stop()
        _ = await probe.terminated()
        probe.tell(1)
        await system.shutdown()
        return WeakBox(system)
    }

    @Test func anIdleSystemIsFreedAfterShutdown() async throws {
        var system: ActorSystem? = makeTestSystem()
        let weak = WeakBox(system!)
        await system!.shutdown()
        system = nil
        await waitUntil("the system is freed") { weak.value == nil }
        #expect(weak.value == nil)
    }

    /// `await shutdown()` returns only after the thread that ran it let go of the system: the
    /// caller's last reference frees it there and then (a driver or a leak check that looks at
    /// once must not race the shutdown thread). Repeated, as the race it guards was narrow.
    @Test(arguments: [false, true]) func aSystemIsFreedTheMomentItsLastReferenceGoesAfterShutdown(manual: Bool) async {
        for round in 0..<50 {
            var system: ActorSystem? = ActorSystem(
                configuration: .init(
                    name: "freed-\(round)", workerCount: 1, introspection: .init(stuckHandlerThreshold: nil),
                    manualDriver: manual ? ManualDriver() : nil))
            let weak = WeakBox(system!)
            await system!.shutdown()
            system = nil
            #expect(weak.value == nil, "round \(round): something still held the system after shutdown returned")
            if weak.value != nil { return }
        }
    }

    /// A system dropped without `shutdown()` (a user's mistake) must not free what its worker
    /// threads still read: they hold the scheduler, so the system leaks its parked threads
    /// instead. In a child process, so that the leaked threads go with it; the sanitizer
    /// stages build the child with AddressSanitizer, which reports a use after free.
    @Test func aSystemReleasedWithoutShutdownLeaksItsThreadsButFreesNothingTheyRead() async {
        await #expect(processExitsWith: .success) {
            do {
                // No watchdog and no actor: nothing else keeps this system alive.
                let system = ActorSystem(
                    configuration: .init(
                        name: "dropped", workerCount: 2, introspection: .init(stuckHandlerThreshold: nil)))
                _ = system.workerCount
            }
            // The workers poll and park on what the scheduler owns.
            var pause = timespec(tv_sec: 0, tv_nsec: 100_000_000)
            nanosleep(&pause, nil)
            _exit(0)  // the leak is the point: skip LeakSanitizer's check at exit
        }
    }
}

/// A weak reference that can cross tasks.
final class WeakBox<Object: AnyObject>: @unchecked Sendable {  // written in init; weak reads are safe
    weak var value: Object?
    init(_ value: Object) { self.value = value }
}

struct Echo: ActorDefinition {
    enum Message: Sendable { case echo(Int, Reply<Int>) }
    func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .echo(let value, let reply): reply.succeed(value)
        }
    }
}

/// Observers registered after shutdown are not kept (no event will come, and keeping them
/// would keep the system alive again), and registering one is not an error.
@Suite struct LateObserverTests {
    @Test func observersRegisteredAfterShutdownAreCancelledAtOnce() async throws {
        let weak = await shutDownSystemThenObserve()
        await waitUntil("the system is freed") { weak.value == nil }
        #expect(weak.value == nil)
    }

    func shutDownSystemThenObserve() async -> WeakBox<ActorSystem> {
        let system = makeTestSystem()
        await system.shutdown()
        let letters = system.deadLetters.observe { _ in _ = system.workerCount }
        let hook = system.hooks.onDeadLetter { _ in _ = system.workerCount }
        let stops = system.hooks.onActorStopped { _ in _ = system.workerCount }
        #expect(letters.isCancelled && hook.isCancelled && stops.isCancelled)
        return WeakBox(system)
    }
}
