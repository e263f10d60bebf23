// ActorKit's workers on Troupe: a pool of workers (a message to one member, an answer from one,
// a broadcast to all, an answer from each), a promise of an answer, notifications published to
// subscribed actors and to a pool, and a supervision pool: actors supervised by id and re-created
// after a crash with their mailbox kept, a child linked to a parent, and a supervised pool whose
// crashed member alone is re-created.

import Synchronization
import ExampleSupport
import Troupe
import TroupePromises
import TroupePubSub
import TroupeSupervision

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// MARK: The worker

/// Shared by every instance made by one creation closure, so that it outlives restarts.
final class Journal: Sendable {
    private let made = Atomic<Int>(0)
    /// Numbers instances 1, 2, 3, … in creation order.
    func nextInstance() -> Int { made.add(1, ordering: .relaxed).newValue }
    var instances: Int { made.load(ordering: .relaxed) }
}

struct WorkerError: Error, CustomStringConvertible {
    let reason: String
    var description: String { "WorkerError(\(reason))" }
}

/// What a worker reports about itself.
struct WorkerStatus: Sendable, CustomStringConvertible {
    let name: String
    let instance: Int
    let handled: [Int]
    let pings: Int
    let notifications: [Int]

    var description: String {
        "\(name) #\(instance): handled \(handled), pings \(pings), notifications \(notifications)"
    }
}

struct Worker: ActorDefinition {
    enum Message: Sendable {
        /// Some work, told and forgotten (ActorKit's `async`).
        case doSomething(Int)
        /// Sent to every member of a pool.
        case ping
        /// A notification's payload, from a topic.
        case notification(Int)
        /// Fails this actor, as ActorKit's `crashWithError:`.
        case crash(String)
        /// Answers with the worker's status (ActorKit's `sync`).
        case status(Reply<WorkerStatus>)
        /// Answers with a string (used through a promise).
        case returnSomething(Reply<String>)
    }

    var name: String
    let instance: Int
    var handled: [Int] = []
    var pings = 0
    var notifications: [Int] = []

    init(name: String, journal: Journal) {
        self.name = name
        instance = journal.nextInstance()
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .doSomething(let value): handled.append(value)
        case .ping: pings += 1
        case .notification(let value): notifications.append(value)
        case .crash(let reason): context.crash(WorkerError(reason: reason))
        case .status(let reply):
            reply.succeed(
                WorkerStatus(
                    name: name, instance: instance, handled: handled, pings: pings, notifications: notifications))
        case .returnSomething(let reply): reply.succeed("something from \(name)")
        }
    }
}

// MARK: Checks

func statuses(of pool: ActorPool<Worker.Message>) async throws -> [WorkerStatus] {
    try await pool.askAll { .status($0) }.map { try $0.get() }
}

// MARK: The program

@main
struct ActorKitWorkers {
    static func main() async throws {
        var configuration = ActorSystem.Configuration(name: "actorkit")
        configuration.logger.logLevel = .error
        let system = try ActorSystem.build(configuration: configuration) { builder in
            try builder.plugin(PubSubPlugin())
        }

        try await pools(system)
        try await notifications(system)
        try await supervision(system)

        await system.shutdown()
        print("\nactorkit-workers: all checks passed")
    }

    /// A pool made with a size and a configuration closure; tell, ask, broadcast, askAll, a promise.
    static func pools(_ system: ActorSystem) async throws {
        step("A pool of four workers, each configured with its index")
        let journal = Journal()
        let pool = try system.spawnPool(
            size: 4, routing: .leastLoaded, name: "bees", of: { Worker(name: "worker", journal: journal) },
            configure: { worker, index in worker.name = "bee-\(index)" })
        print("\(pool)")
        check(pool.size == 4 && journal.instances == 4, "four members were made")

        pool.tell(.doSomething(1))
        let answer = try await pool.ask { .returnSomething($0) }
        print("tell(.doSomething(1)) went to one member; ask answered: \(answer)")
        check(answer.hasPrefix("something from bee-"), "one member answers the ask")

        step("Broadcast to every member, then ask each one")
        let reached = pool.broadcast(.ping)
        print("broadcast(.ping) reached \(reached) members")
        check(reached == 4, "a broadcast reaches every member")
        let everyone = try await statuses(of: pool)
        for status in everyone { print("  \(status)") }
        check(everyone.map(\.pings) == [1, 1, 1, 1], "every member got exactly one ping")
        check(everyone.map(\.name) == ["bee-0", "bee-1", "bee-2", "bee-3"], "askAll answers in member order")
        check(everyone.flatMap(\.handled) == [1], "the told message was handled by exactly one member")

        step("An answer as a promise (ActorKit's promise subspec)")
        let promised = pool.askPromise { .returnSomething($0) }.map { $0.uppercased() }
        let shouted = try await promised.get()
        print("askPromise + map: \(shouted)")
        check(shouted.hasPrefix("SOMETHING FROM BEE-"), "the promise carries the mapped answer")
        pool.stop()
    }

    /// Notifications: a topic with a payload type, actors and a pool subscribed.
    static func notifications(_ system: ActorSystem) async throws {
        step("Publish and subscribe")
        let pubsub = try system.pubSub()
        let journal = Journal()
        let bee = system.spawn(Worker(name: "Bee", journal: journal), options: SpawnOptions(name: "Bee"))
        let wasp = system.spawn(Worker(name: "Wasp", journal: journal), options: SpawnOptions(name: "Wasp"))
        let notification = try pubsub.topic("notification", of: Int.self)
        try notification.subscribe(bee) { .notification($0) }
        try notification.subscribe(wasp) { .notification($0) }
        let delivered = notification.publish(5)
        print("published 5 to '\(notification.name)': \(delivered) subscribers took it")
        check(delivered == 2, "both subscribers took the notification")

        notification.unsubscribe(wasp)
        let byName = try pubsub.publish(6, to: "notification")
        print("Wasp unsubscribed; publishing 6 by the topic's name reached \(byName) subscriber")
        check(byName == 1, "an unsubscribed actor no longer receives notifications")
        let beeStatus = try await bee.ask { .status($0) }
        let waspStatus = try await wasp.ask { .status($0) }
        print("  \(beeStatus)\n  \(waspStatus)")
        check(beeStatus.notifications == [5, 6], "Bee saw both notifications, in order")
        check(waspStatus.notifications == [5], "Wasp saw the one before it unsubscribed")

        do {
            try notification.subscribe(bee) { .notification($0) }
            fail("subscribing twice must be refused")
        } catch {
            print("subscribing Bee again: \(error)")
        }

        step("A pool subscribed: each notification is handled by one available member")
        let workers = try system.spawnPool(size: 3, routing: .leastLoaded, name: "workers") { index in
            Worker(name: "worker-\(index)", journal: journal)
        }
        let toWorkers = try pubsub.topic("notificationToWorkers", of: Int.self)
        try toWorkers.subscribe(workers, delivery: .oneMember) { .notification($0) }
        for value in 1...6 { toWorkers.publish(value) }
        let members = try await statuses(of: workers)
        for status in members { print("  \(status)") }
        let seen = members.flatMap(\.notifications).sorted()
        check(seen == [1, 2, 3, 4, 5, 6], "each notification was handled exactly once (got \(seen))")

        bee.stop()
        _ = await bee.terminated()
        let afterStop = notification.publish(7)
        print("Bee stopped; it left the topic by itself: publishing 7 reached \(afterStop) subscribers")
        check(afterStop == 0, "a stopped subscriber is removed from the topic")
        wasp.stop()
        workers.stop()
    }

    /// A supervision pool: actors by id, crashes, links, a supervised pool.
    static func supervision(_ system: ActorSystem) async throws {
        step("Supervised actors, by id")
        let actors = Supervisor(system: system, name: "actors")
        let events = Lines()
        actors.observe { events.append("\($0.id) \($0.kind)") }
        let masterJournal = Journal()
        let childJournal = Journal()
        // The creation closure runs now and again whenever the actor must be re-created.
        // (Failures are logged at warning level; this program's logger shows errors only.)
        let master = try actors.supervise(id: "master") { Worker(name: "master", journal: masterJournal) }
        try actors.supervise(id: "child") { Worker(name: "child", journal: childJournal) }
        let child = try actors.ref(id: "child", as: Worker.Message.self)
        print("supervising \(actors.ids)")

        // Access by id: the message type is checked where it is used.
        try actors["master"]?.tell(Worker.Message.doSomething(1))
        do {
            try actors["master"]?.tell("hello")
            fail("a message of the wrong type must be refused")
        } catch {
            print("telling a String to master: \(error)")
        }

        step("A crash re-creates the actor; what waited in its mailbox is kept")
        master.tell(.crash("disk full"))
        master.tell(.doSomething(2))
        master.tell(.doSomething(3))
        let afterCrash = try await master.ask { .status($0) }
        print("  \(afterCrash)")
        check(afterCrash.instance == 2, "a fresh instance replaced the crashed one")
        check(afterCrash.handled == [2, 3], "the messages queued behind the crash were handled by the new instance")
        await waitUntil("the restart is reported") { events.all.contains("master restarted (failed)") }
        check(actors.restartCount(of: "master") == 1, "one restart of master")

        step("Linking: the child is re-created when its parent is")
        try actors.link("child", toParent: "master")
        print("linked children of master: \(try actors.linkedChildren(of: "master"))")
        child.tell(.doSomething(10))
        let childBefore = try await child.ask { .status($0) }
        print("  before: \(childBefore)")
        check(childBefore.instance == 1 && childBefore.handled == [10], "the child's first instance did the work")
        master.tell(.crash("out of memory"))
        await waitUntil("the child is restarted with its parent") {
            events.all.contains("child restarted (linked parent 'master' restarted)")
        }
        let childStatus = try await child.ask { .status($0) }
        let masterStatus = try await master.ask { .status($0) }
        print("  after:  \(masterStatus)\n  after:  \(childStatus)")
        check(masterStatus.instance == 3, "master was re-created again")
        check(childStatus.instance == 2 && childStatus.handled.isEmpty, "the child was re-created with its parent")

        step("Unsupervising the parent removes its linked child too")
        try actors.unsupervise(id: "master")
        let childEnd = await child.terminated()
        print("child: \(childEnd); still supervised: \(actors.ids)")
        check(actors.ids.isEmpty, "both the parent and its linked child left the supervision pool")
        check(
            events.all.contains("child stopped (linked parent 'master' removed)"),
            "the child was stopped because its parent was removed")

        step("A supervised pool: a crashed member alone is re-created")
        let crewJournal = Journal()
        let crew = try actors.supervisePool(id: "crew", size: 3) { index in
            Worker(name: "crew-\(index)", journal: crewJournal)
        }
        let crashing = crew.members[1]
        crashing.tell(.crash("bad input"))
        crashing.tell(.doSomething(7))
        let afterMemberCrash = try await statuses(of: crew)
        for status in afterMemberCrash { print("  \(status)") }
        check(afterMemberCrash.map(\.instance) == [1, 4, 3], "only member 1 was re-created")
        check(afterMemberCrash[1].handled == [7], "its successor handled what waited in its mailbox")

        step("The pool crashing as a whole re-creates every member")
        let directive = try actors.reportFailure(id: "crew", error: WorkerError(reason: "lost the backend"))
        print("reportFailure(id: \"crew\") -> \(directive)")
        let afterPoolCrash = try await statuses(of: crew)
        for status in afterPoolCrash { print("  \(status)") }
        check(afterPoolCrash.allSatisfy { $0.instance > 4 }, "every member is a fresh instance")
        print("restarts of crew: \(actors.restartCount(of: "crew") ?? 0)")

        print("\nsupervision events:")
        for line in events.all { print("  \(line)") }
        actors.stopAll()
    }
}
