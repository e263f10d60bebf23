import Dispatch
import Logging
import Troupe
import TroupeCluster
import TroupeClusterEntities
import TroupeObserver
import TroupePersistence
import TroupeVirtualActors

#if canImport(Glibc)
    import Glibc
#endif

/// One line on stdout, flushed at once: the tests and benchmarks read them as they come.
func emit(_ line: String) {
    print(line)
    fflush(nil)
}

/// A message on stderr (file descriptor 2: Glibc's `stderr` is a global Swift 6 refuses).
func complain(_ message: String) {
    let text = "troupe-cluster-node: \(message)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
}

/// A status as one word of a MEMBER line (`alive(3)`, `down`): the line's fields are split on spaces.
func compact(_ status: ClusterMemberStatus) -> String {
    switch status {
    case .alive(let incarnation): "alive(\(incarnation))"
    case .suspect(let incarnation): "suspect(\(incarnation))"
    case .unreachable(let incarnation): "unreachable(\(incarnation))"
    case .down: "down"
    }
}

func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Returns at the first SIGTERM or SIGINT. The handlers run on a dispatch queue, not the
/// main actor, hence a nonisolated function and a `@Sendable` closure.
nonisolated func terminationSignal() async {
    let (stream, continuation) = AsyncStream<Void>.makeStream()
    let sources = [SIGTERM, SIGINT].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { @Sendable in continuation.yield() }
        source.resume()
        return source
    }
    for await _ in stream { break }
    for source in sources { source.cancel() }
}

let options: NodeOptions
do {
    options = try NodeOptions(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    complain("\(error)")
    exit(64)
}

var membership = ClusterMembershipSettings()
membership.probeInterval = options.probeInterval
membership.pingTimeout = options.probeInterval * 0.4
membership.suspicionTimeout = options.suspicionTimeout
membership.downAfter = options.downAfter
var logger = Logger(label: "troupe-cluster-node")
logger.logLevel = .warning
let actors = ActorSystem(configuration: .init(name: "node", workerCount: 1, pinWorkers: false, logger: logger))
let cluster: ClusterSystem
do {
    cluster = try await ClusterSystem(
        settings: ClusterSettings(
            host: options.host, port: options.port, seeds: options.seeds, secret: options.secret,
            handshakeTimeout: options.handshakeTimeout,
            limits: ClusterConnectionLimits(incompleteFrameTimeout: options.incompleteFrameTimeout),
            membership: membership, logger: logger),
        actorSystem: actors)
} catch {
    complain("\(error)")
    exit(1)
}
let echo = ClusterEcho(actorSystem: cluster)
try cluster.receptionist.checkIn(echo, with: echoKey)

var observer: Observer?
if let port = options.observerPort {
    do {
        observer = try await actors.serveObserver(ObserverSettings(port: port, token: options.observerToken))
    } catch {
        complain("the observer could not start: \(error)")
        exit(1)
    }
    emit("OBSERVER \(observer?.url ?? "")")
}
emit("READY \(cluster.node)")
var demo: ClusterEntityRegion<PersistentMessage<DemoEntity.Command>>?
if options.entities {
    do {
        let journal = Journal(store: InMemoryStore())
        let region = try await ClusterEntityRegion(cluster: cluster, name: "demo", idleTimeout: nil) {
            [actors] id in
            actors.spawn(persistent: DemoEntity(persistenceID: PersistenceID(id.description)), journal: journal)
                .actorRef
        }
        demo = region
        if options.activate > 0 {
            try await region.awaitMembers(options.entityMembers, timeout: .seconds(60))
            for key in 0..<options.activate { region.entity("demo-\(key)").tell(.command(.touch)) }
            emit("ENTITIES \(options.activate)")
        }
    } catch {
        complain("the entity kind 'demo' could not start: \(error)")
        exit(1)
    }
}
// Until SIGTERM / SIGINT, or until the cluster removes this node (its events then end).
let signalled = await withTaskGroup(of: Bool.self) { group in
    group.addTask {
        await terminationSignal()
        return true
    }
    group.addTask {
        for await event in cluster.membershipEvents() {
            emit("MEMBER \(event.member) \(compact(event.status)) \(monotonicNanoseconds())")
        }
        return false
    }
    let first = await group.next() ?? true
    group.cancelAll()
    return first
}
await observer?.shutdown()
await cluster.shutdown()
await actors.shutdown()
_ = echo
_ = demo
if !signalled {
    emit("REMOVED")
    exit(3)
}
exit(0)
