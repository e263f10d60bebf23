import Synchronization
import Testing
import Troupe
import TroupePubSub
import TroupeTestSupport

protocol ChangeObserver: AnyObject, Sendable {
    func didChange(_ value: Int)
}

/// Records calls; thread-safe.
final class RecordingObserver: ChangeObserver {
    let name: String
    let log: Recorder<String>
    let threads = Recorder<UInt>()
    init(_ name: String, log: Recorder<String>) {
        self.name = name
        self.log = log
    }
    func didChange(_ value: Int) {
        log.append("\(name) \(value)")
        threads.append(TestThreads.currentID)
    }
}

/// Runs a closure during its call (to add or remove observers mid-dispatch).
final class ActingObserver: ChangeObserver {
    let action: @Sendable (ActingObserver) -> Void
    let calls = AtomicCounter()
    init(_ action: @escaping @Sendable (ActingObserver) -> Void) { self.action = action }
    func didChange(_ value: Int) {
        calls.increment()
        action(self)
    }
}

@Suite struct MultiDispatcherTests {
    @Test func synchronousDispatchReachesEveryObserverOnTheCallingThread() {
        let log = Recorder<String>()
        let dispatcher = MultiDispatcher<any ChangeObserver>()
        let a = RecordingObserver("a", log: log)
        let b = RecordingObserver("b", log: log)
        dispatcher.add(a)
        dispatcher.add(b)
        dispatcher.add(a)  // no effect
        #expect(dispatcher.observerCount == 2)
        dispatcher.dispatch { $0.didChange(1) }
        #expect(log.values == ["a 1", "b 1"])
        #expect(Set(a.threads.values) == [TestThreads.currentID])
        #expect(dispatcher.remove(a))
        #expect(!dispatcher.remove(a))
        #expect(dispatcher.dispatchSynchronously { $0.didChange(2) } == 1)
        #expect(log.values == ["a 1", "b 1", "b 2"])
    }

    @Test func observersAreHeldWeakly() {
        let log = Recorder<String>()
        let dispatcher = MultiDispatcher<any ChangeObserver>()
        let kept = RecordingObserver("kept", log: log)
        dispatcher.add(kept)
        do {
            let transient = RecordingObserver("transient", log: log)
            dispatcher.add(transient)
            dispatcher.dispatch { $0.didChange(1) }
            #expect(dispatcher.observerCount == 2)
        }
        // `transient` is gone: no unregistering was needed.
        #expect(dispatcher.observerCount == 1)
        dispatcher.dispatch { $0.didChange(2) }
        #expect(log.values == ["kept 1", "transient 1", "kept 2"])
        withExtendedLifetime(kept) {}
    }

    @Test func asynchronousDispatchRunsOnTheTargetActorInOrder() async throws {
        try await withTestSystem { system in
            let log = Recorder<String>()
            let dispatcher = MultiDispatcher<any ChangeObserver>(
                target: .serialActor(in: system, executor: .dedicatedThread))
            let a = RecordingObserver("a", log: log)
            dispatcher.add(a)
            for value in 0..<100 { #expect(dispatcher.dispatch { $0.didChange(value) } == .enqueued) }
            await waitUntil { log.count == 100 }
            #expect(log.values == (0..<100).map { "a \($0)" })
            // One dedicated thread, not the caller's.
            #expect(Set(a.threads.values).count == 1)
            #expect(!a.threads.values.contains(TestThreads.currentID))
        }
    }

    @Test func dispatchOntoAGivenActor() async throws {
        struct Host: ActorDefinition {
            enum Message: Sendable { case run(DispatchJob), ping }
            let seen: Recorder<String>
            func receive(_ message: Message, context: ActorContext<Message>) {
                switch message {
                case .run(let job): job.run()
                case .ping: seen.append("ping")
                }
            }
        }
        try await withTestSystem { system in
            let log = Recorder<String>()
            let host = system.spawn(Host(seen: log))
            let dispatcher = MultiDispatcher<any ChangeObserver>(target: .actor(host) { .run($0) })
            let a = RecordingObserver("a", log: log)
            dispatcher.add(a)
            dispatcher.dispatch { $0.didChange(1) }
            host.tell(.ping)
            dispatcher.dispatch { $0.didChange(2) }
            await waitUntil { log.count == 3 }
            #expect(log.values == ["a 1", "ping", "a 2"])
            // Synchronous on request, whatever the target.
            dispatcher.dispatchSynchronously { $0.didChange(3) }
            #expect(log.last == "a 3")
            host.stop()
            await waitUntil { host.isStopped }
            #expect(dispatcher.dispatch { $0.didChange(4) } == .deadLettered(.recipientStopped))
        }
    }

    @Test func addingAndRemovingDuringADispatchIsSafe() {
        let log = Recorder<String>()
        let dispatcher = MultiDispatcher<any ChangeObserver>()
        let late = RecordingObserver("late", log: log)
        let victim = RecordingObserver("victim", log: log)
        // Removes itself and `victim`, and adds `late`, during the first dispatch.
        let actor = ActingObserver { me in
            dispatcher.remove(me)
            dispatcher.remove(victim)
            dispatcher.add(late)
        }
        dispatcher.add(actor)
        dispatcher.add(victim)
        dispatcher.dispatch { $0.didChange(1) }
        // `victim` was removed before its turn: not called. `late` joins from the next dispatch.
        #expect(log.values.isEmpty)
        dispatcher.dispatch { $0.didChange(2) }
        #expect(log.values == ["late 2"])
        #expect(actor.calls.value == 1)
        #expect(dispatcher.observerCount == 1)
        withExtendedLifetime(victim) {}
    }

    @Test func concurrentChurnWhileDispatching() async throws {
        try await withTestSystem { system in
            let dispatcher = MultiDispatcher<any ChangeObserver>(target: .serialActor(in: system))
            let stableCalls = AtomicCounter()
            let stable = ActingObserver { _ in stableCalls.increment() }
            dispatcher.add(stable)
            let rounds = StressScale.scaled(2_000, minimum: 200)
            let done = Flag()
            await TestThreads.run(count: 3) { thread in
                switch thread {
                case 0:
                    for value in 0..<rounds { dispatcher.dispatch { $0.didChange(value) } }
                    done.set()
                case 1:
                    for value in 0..<rounds { dispatcher.dispatchSynchronously { $0.didChange(value) } }
                default:
                    var index = 0
                    while !done.isSet || index < 100 {
                        let transient = ActingObserver { _ in }
                        dispatcher.add(transient)
                        if index % 2 == 0 { dispatcher.remove(transient) }  // else dropped by deinit
                        index += 1
                    }
                }
            }
            await waitUntil { stableCalls.value == 2 * rounds }
            #expect(dispatcher.observerCount == 1)
            withExtendedLifetime(stable) {}
        }
    }
}
