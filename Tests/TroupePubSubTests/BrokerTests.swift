import Testing
import Troupe
import TroupePubSub
import TroupeTestSupport

@Suite struct BrokerTests {
    enum Notice: Sendable, Equatable { case price(Double), other }

    @Test func publishMapsThePayloadIntoEachSubscribersMessage() async throws {
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            let prices = try pubsub.topic("prices", of: Double.self)
            let notices = Recorder<Notice>()
            let raw = Recorder<Double>()
            let mapped = system.spawn(Probe<Notice>(received: notices))
            let plain = system.spawn(Probe<Double>(received: raw))
            try prices.subscribe(mapped) { .price($0) }
            try prices.subscribe(plain)
            #expect(prices.subscriberCount == 2)
            #expect(prices.publish(1.5) == 2)
            #expect(try pubsub.publish(2.5, to: "prices") == 2)
            await waitUntil("both delivered") { notices.count == 2 && raw.count == 2 }
            #expect(notices.values == [.price(1.5), .price(2.5)])
            #expect(raw.values == [1.5, 2.5])
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func topicsAreSharedByNameAndPublishingWithoutSubscribersIsQuiet() async throws {
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            let first = try pubsub.topic("t", of: Int.self)
            let second = try pubsub.topic("t", of: Int.self)
            #expect(first === second)
            #expect(first.publish(1) == 0)
            #expect(pubsub.topicNames == ["t"])
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func unsubscribeStopsDelivery() async throws {
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            let topic = try pubsub.topic("numbers", of: Int.self)
            let byRef = Recorder<Int>()
            let byToken = Recorder<Int>()
            let a = system.spawn(Probe<Int>(received: byRef))
            let b = system.spawn(Probe<Int>(received: byToken))
            try topic.subscribe(a)
            let token = try topic.subscribe(b)
            topic.publish(1)
            await waitUntil { byRef.count == 1 && byToken.count == 1 }
            #expect(topic.unsubscribe(a))
            #expect(!topic.unsubscribe(a))
            #expect(token.isActive)
            #expect(pubsub.unsubscribe(token))
            #expect(!token.isActive)
            #expect(!token.cancel())
            #expect(topic.publish(2) == 0)
            #expect(!topic.isSubscribed(a) && !topic.isSubscribed(b))
            #expect(pubsub.subscriptionCount(of: a) == 0)
            // Resubscribing after an unsubscribe works.
            try topic.subscribe(a)
            topic.publish(3)
            await waitUntil { byRef.count == 2 }
            #expect(byRef.values == [1, 3])
            #expect(byToken.values == [1])
        }
    }

    @Test func aStoppedActorIsUnsubscribedEverywhereWithoutDeadLetters() async throws {
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            let a = try pubsub.topic("a", of: Int.self)
            let b = try pubsub.topic("b", of: String.self)
            let ref = system.spawn(Probe<Int>())
            let stays = system.spawn(Probe<Int>())
            try a.subscribe(ref)
            try a.subscribe(stays)
            try b.subscribe(ref) { $0.count }
            #expect(pubsub.subscriptionCount(of: ref) == 2)
            ref.stop()
            await waitUntil("auto-unsubscribed") { a.subscriberCount == 1 && b.subscriberCount == 0 }
            #expect(pubsub.subscriptionCount(of: ref) == 0)
            #expect(!a.isSubscribed(ref))
            #expect(a.publish(1) == 1)
            #expect(b.publish("x") == 0)
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func aPublicationEnqueuedBeforeTheSubscriberStopsIsADeadLetterWithItsReason() async throws {
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            let topic = try pubsub.topic("n", of: Int.self)
            let letters = Recorder<DeadLetter>()
            system.deadLetters.observe { letters.append($0) }
            let gate = Gate()
            let received = Recorder<Int>()
            let stopper = system.spawn(StopsOnZero(received: received, gate: gate))
            try topic.subscribe(stopper)
            topic.publish(-1)
            await waitUntil { gate.entered == 1 }
            // Held at -1: 0, 1 and 2 queue up; it handles 0 and stops itself, with 1 and 2
            // still in its mailbox.
            #expect(topic.publish(0) == 1)
            #expect(topic.publish(1) == 1)
            #expect(topic.publish(2) == 1)
            gate.open()
            await waitUntil("dead letters") { letters.count == 2 }
            #expect(received.values == [-1, 0])
            #expect(letters.values.allSatisfy { $0.recipient == stopper.address && $0.reason == .recipientStopped })
            #expect(letters.values.compactMap { $0.message as? Int }.sorted() == [1, 2])
            #expect(system.deadLetters.count(.recipientStopped) == 2)
            await waitUntil("auto-unsubscribed") { topic.subscriberCount == 0 }
            #expect(topic.publish(3) == 0)
            #expect(system.deadLetters.total == 2)
        }
    }

    @Test func eachSubscriberSeesEachPublishersPublicationsInOrder() async throws {
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            let topic = try pubsub.topic("ordered", of: Publication.self)
            let delivered = AtomicCounter()
            let tallies = (0..<8).map { _ in system.spawn(Tally(delivered: delivered)) }
            for tally in tallies { try topic.subscribe(tally) { .publication($0) } }
            let publishers = 4
            let perPublisher = StressScale.scaled(2_000, minimum: 100)
            await TestThreads.run(count: publishers) { publisher in
                for sequence in 0..<perPublisher {
                    topic.publish(Publication(publisher: publisher, sequence: sequence))
                }
            }
            await waitUntil { delivered.value == tallies.count * publishers * perPublisher }
            for tally in tallies {
                let summary = try await tally.ask { .summary($0) }
                #expect(summary.count == publishers * perPublisher)
                #expect(summary.outOfOrder == 0)
            }
        }
    }

    // MARK: Bad input

    @Test func badInputIsRefusedWithAnError() async throws {
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            #expect(throws: PubSubError.emptyTopicName) { try pubsub.topic("", of: Int.self) }
            _ = try pubsub.topic("ints", of: Int.self)
            #expect(throws: PubSubError.self) { try pubsub.topic("ints", of: String.self) }
            do {
                _ = try pubsub.topic("ints", of: String.self)
            } catch let error as PubSubError {
                guard case .payloadTypeMismatch(let name, let existing, let requested) = error else {
                    Issue.record("\(error)"); return
                }
                #expect(name == "ints" && existing == "Swift.Int" && requested == "Swift.String")
            }
            #expect(throws: PubSubError.self) { try pubsub.publish("text", to: "ints") }

            let topic = try pubsub.topic("ints", of: Int.self)
            let ref = system.spawn(Probe<Int>())
            try topic.subscribe(ref)
            #expect(throws: PubSubError.alreadySubscribed(topic: "ints", subscriber: ref.description)) {
                try topic.subscribe(ref) { $0 + 1 }
            }
            #expect(topic.subscriberCount == 1)

            let stopped = system.spawn(Probe<Int>())
            stopped.stop()
            await waitUntil { stopped.isStopped }
            #expect(throws: PubSubError.subscriberStopped(topic: "ints", subscriber: stopped.description)) {
                try topic.subscribe(stopped)
            }

            let pool = try system.spawnPool(size: 2) { _ in Probe<Int>() }
            try topic.subscribe(pool)
            #expect(throws: PubSubError.self) { try topic.subscribe(pool, delivery: .everyMember) }
            pool.stop()
            await waitUntil { pool.isStopped }
            let stoppedPool = try system.spawnPool(size: 1) { _ in Probe<Int>() }
            stoppedPool.stop()
            await waitUntil { stoppedPool.isStopped }
            #expect(throws: PubSubError.subscriberStopped(topic: "ints", subscriber: stoppedPool.description)) {
                try topic.subscribe(stoppedPool)
            }

            // A subscriber of another system.
            try await withTestSystem(name: "other") { other in
                let foreign = other.spawn(Probe<Int>())
                #expect(throws: PubSubError.foreignSystem(topic: "ints", subscriber: foreign.description)) {
                    try topic.subscribe(foreign)
                }
                let foreignPool = try other.spawnPool(size: 1) { _ in Probe<Int>() }
                #expect(throws: PubSubError.self) { try topic.subscribe(foreignPool) }
            }
            #expect(topic.subscriberCount == 2)  // ref and the stopped pool, dropped at the next publish
            #expect(topic.publish(1) == 1)
            #expect(topic.subscriberCount == 1)
            #expect(PubSubError.emptyTopicName.description.contains("empty"))
        }
    }

    @Test func unsubscribeAllRemovesAnActorFromEveryTopic() async throws {
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            let ref = system.spawn(Probe<Int>())
            for name in ["a", "b", "c"] { try pubsub.topic(name, of: Int.self).subscribe(ref) }
            #expect(pubsub.subscriptionCount(of: ref) == 3)
            #expect(pubsub.unsubscribeAll(ref) == 3)
            #expect(pubsub.subscriptionCount(of: ref) == 0)
            #expect(try pubsub.topic("a", of: Int.self).subscriberCount == 0)
        }
    }

    @Test func subscribingFromInsideAnActorWorks() async throws {
        struct SelfSubscriber: ActorDefinition {
            let topic: Topic<Int>
            let received: Recorder<Int>
            func started(context: ActorContext<Int>) { _ = try? topic.subscribe(context.ref) }
            func receive(_ message: Int, context: ActorContext<Int>) { received.append(message) }
        }
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            let topic = try pubsub.topic("inside", of: Int.self)
            let received = Recorder<Int>()
            _ = system.spawn(SelfSubscriber(topic: topic, received: received))
            await waitUntil { topic.subscriberCount == 1 }
            topic.publish(7)
            await waitUntil { received.values == [7] }
        }
    }
}

@Suite struct PoolSubscriberTests {
    @Test func eachPublicationGoesToOneMember() async throws {
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            let topic = try pubsub.topic("jobs", of: Int.self)
            let received = Recorder<String>()
            let pool = try system.spawnPool(size: 3, routing: .leastLoaded) { _ in Probe<String>(received: received) }
            try topic.subscribe(pool) { "job \($0)" }
            for index in 0..<30 { #expect(topic.publish(index) == 1) }
            await waitUntil { received.count == 30 }
            #expect(Set(received.values) == Set((0..<30).map { "job \($0)" }))
            try await Task.sleep(for: .milliseconds(20))
            #expect(received.count == 30)
        }
    }

    @Test func broadcastDeliversToEveryMember() async throws {
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            let topic = try pubsub.topic("all", of: Int.self)
            let recorders = (0..<3).map { _ in Recorder<Int>() }
            let pool = try system.spawnPool(size: 3) { index in Probe<Int>(received: recorders[index]) }
            try topic.subscribe(pool, delivery: .everyMember)
            for index in 0..<10 { topic.publish(index) }
            await waitUntil { recorders.allSatisfy { $0.count == 10 } }
            for recorder in recorders { #expect(recorder.values == Array(0..<10)) }
        }
    }

    @Test func aStoppedPoolIsDroppedWithoutDeadLetters() async throws {
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            let topic = try pubsub.topic("p", of: Int.self)
            let pool = try system.spawnPool(size: 2) { _ in Probe<Int>() }
            let token = try topic.subscribe(pool)
            pool.stop()
            await waitUntil { pool.isStopped }
            #expect(topic.publish(1) == 0)
            #expect(topic.subscriberCount == 0)
            #expect(!token.isActive)
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func unsubscribingAPool() async throws {
        try await withTestSystem { system in
            let pubsub = PubSub(system: system)
            let topic = try pubsub.topic("p", of: Int.self)
            let pool = try system.spawnPool(size: 2) { _ in Probe<Int>() }
            try topic.subscribe(pool)
            #expect(topic.unsubscribe(pool))
            #expect(!topic.unsubscribe(pool))
            #expect(topic.publish(1) == 0)
        }
    }
}

@Suite struct PluginTests {
    @Test func thePluginInstallsTheBrokerAsAService() async throws {
        try await withPubSubPluginSystem { system in
            let pubsub = try system.pubSub()
            #expect(pubsub === (try system.services.resolve(PubSub.self)))
            #expect(system.installedPlugins.map(\.name) == ["troupe.pubsub"])
            let topic = try pubsub.topic("events", of: Int.self)
            let received = Recorder<Int>()
            let ref = system.spawn(Probe<Int>(received: received))
            try topic.subscribe(ref)
            topic.publish(42)
            await waitUntil { received.values == [42] }
            // The plugin's stop hook unsubscribes stopped actors.
            ref.stop()
            await waitUntil("auto-unsubscribed through the plugin's hook") { topic.subscriberCount == 0 }
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func actorsReachTheBrokerThroughTheirContext() async throws {
        struct Announcer: ActorDefinition {
            func receive(_ message: String, context: ActorContext<String>) {
                _ = try? context.pubSub().publish(message, to: "announcements")
            }
        }
        try await withPubSubPluginSystem { system in
            let received = Recorder<String>()
            let listener = system.spawn(Probe<String>(received: received))
            try system.pubSub().topic("announcements", of: String.self).subscribe(listener)
            system.spawn(Announcer()).tell("hello")
            await waitUntil { received.values == ["hello"] }
        }
    }

    @Test func installingTwiceFailsAndAMissingPluginIsReported() async throws {
        try await withPubSubPluginSystem { system in
            #expect(throws: RegistryError.self) { try system.install(PubSubPlugin()) }
        }
        try await withTestSystem { system in
            #expect(throws: ServiceError.self) { try system.pubSub() }
            try system.install(PubSubPlugin())
            let pubsub = try system.pubSub()
            let topic = try pubsub.topic("late", of: Int.self)
            let ref = system.spawn(Probe<Int>())
            try topic.subscribe(ref)
            ref.stop()
            await waitUntil { topic.subscriberCount == 0 }
        }
    }

    @Test func aPluginBrokerBindsToItsFirstSubscribersSystem() async throws {
        try await withPubSubPluginSystem { system in
            let topic = try system.pubSub().topic("bound", of: Int.self)
            try topic.subscribe(system.spawn(Probe<Int>()))
            try await withTestSystem(name: "other") { other in
                #expect(throws: PubSubError.self) { try topic.subscribe(other.spawn(Probe<Int>())) }
            }
        }
    }
}
