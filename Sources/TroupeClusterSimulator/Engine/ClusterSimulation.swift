import TroupeCluster
import TroupeClusterMembership

/// A cluster of simulated nodes in one process, each running TroupeCluster's real membership
/// state machine (`SWIMStateMachine`) and, on every connection it makes or takes, its real
/// handshake state machine (`HandshakeStateMachine`, with the HMAC proofs), over a simulated
/// network, on virtual time. Every
/// choice (latencies, losses, the nodes' probe orders, their clocks) is drawn from the
/// settings' seed, so a run replays exactly from it; its ``trace`` tells the story of a
/// failing one.
///
/// The simulator plays the part TroupeCluster's `ClusterSystem` plays around the state
/// machine: it ticks each node every tenth of a probe interval, delivers its messages, dials
/// the members gossip names and the seeds (each end joins the other when its handshake
/// completes; a member whose address another run answers is marked down), tells a node when a
/// connection drops and when a redial is refused (a killed process's address). A node declared
/// down learns it as a TroupeCluster node does: the member that holds it down closes their
/// connection and refuses the next with a proved "you are down", and then it stops.
///
/// Not thread-safe: one simulation runs on one thread (run many in parallel, one each).
public final class ClusterSimulation {
    public let settings: ClusterSimulationSettings
    public internal(set) var report: SimulationReport
    public internal(set) var trace: SimulationTrace

    var nodes: [SimulatedNode] = []
    var queue = EventQueue<Event>()
    var network: SimulatedNetwork
    var generator: SplitMix
    var nowNanoseconds: Int64 = 0
    /// Which node index a uid was drawn for (old runs of a restarted node included).
    var indexByUID: [UInt64: Int] = [:]
    /// Connections whose handshake runs, by number; the dials in flight (by
    /// ``SimulatedConnection/pair``).
    var connections: [Int: SimulatedConnection] = [:]
    var dialsInFlight: Set<UInt64> = []
    var nextConnection = 0
    /// When the latest receptionist update on each directed pair arrives.
    var listingInFlightUntil: [UInt64: Int64] = [:]
    /// Every node's: the cluster's secret and name.
    let handshake = Handshake(secret: "the simulated cluster's secret", clusterName: "simulated")
    /// Crashes by the uid that crashed, to the index of their record in the report.
    private var crashByUID: [UInt64: Int] = [:]
    private var joinByUID: [UInt64: Int] = [:]
    /// When the latest fault happened (a heal and a loss change included).
    private var lastFaultAt: Int64 = 0
    /// Partitions' spans, for explaining suspicions: (start, end or nil while cut).
    private var partitions: [(start: Int64, end: Int64?)] = []
    private let tickNanoseconds: Int64
    private let pauseLimitNanoseconds: Int64
    /// How far back a pause or partition explains a suspicion or a down.
    private let explanationHorizon: Int64

    enum Event {
        case tick(node: Int, uid: UInt64)
        case deliver(node: Int, uid: UInt64, from: ClusterNode, message: SWIMMessage)
        /// A handshake envelope of `connection` arrives at `node`, either end (a stranger's end
        /// is ``SimulatedConnection/strangerIndex``).
        case handshake(node: Int, uid: UInt64, connection: Int, envelope: WireEnvelope)
        /// `connection`'s handshake time is up: if it has not completed, it closes.
        case handshakeDeadline(connection: Int)
        /// A receptionist update from `from` arrives at `node`, over their association.
        case receptionist(node: Int, uid: UInt64, from: ClusterNode, update: WireEnvelope.ReceptionistUpdate)
        /// Node `node`'s run checks an actor out and another in.
        case registrationChurn(node: Int, uid: UInt64)
        /// A dial of `member`'s address was refused: nothing listens there.
        case refused(node: Int, uid: UInt64, member: ClusterNode)
        /// Another run of a node answered at `member`'s address.
        case superseded(node: Int, uid: UInt64, member: ClusterNode)
        /// The connection to `member` dropped (its process was killed).
        case connectionLost(node: Int, uid: UInt64, member: ClusterNode)
        case resume(node: Int, uid: UInt64)
        case fault(SimulatedFault)
    }

    /// Settings out of range stop the program with a message that says which and what to change
    /// (in release builds too): a simulation of impossible settings would measure nothing.
    public init(_ settings: ClusterSimulationSettings) {
        settings.checkRanges()
        self.settings = settings
        report = SimulationReport(nodes: settings.nodes)
        trace = SimulationTrace(capacity: settings.traceCapacity)
        network = SimulatedNetwork(latency: settings.latency, loss: settings.loss)
        generator = SplitMix(seed: settings.seed)
        let membership = settings.membership
        tickNanoseconds = max(1, (settings.tickInterval ?? membership.probeInterval / 10).simulatedNanoseconds)
        pauseLimitNanoseconds = (settings.pauseLimit ?? membership.suspicionTimeout).simulatedNanoseconds
        explanationHorizon =
            (membership.suspicionTimeout * max(1, membership.suspicionMaximumMultiplier) + membership.downAfter
            + membership.probeInterval * (5 * (1 + max(0, membership.maximumLocalHealthMultiplier))))
            .simulatedNanoseconds
        for index in 0..<settings.nodes { nodes.append(makeNode(index: index, host: Self.host(index))) }
        let formed = nodes.map(\.node)
        if settings.formed { assumeAssociated() }
        for index in nodes.indices {
            startRegistrations(index, inFormedCluster: settings.formed)
            if settings.formed {
                nodes[index].machine.assumeFormed(formed, now: localTime(of: index))
                nodes[index].seeds = seedAddresses(for: index)
                nodes[index].lastSeedDial = 0
            } else if index > 0 {
                // Started at once, each joining through node 0 (as `troupe-bench cluster` starts
                // its processes); node 0 has no seed.
                nodes[index].seeds = [0]
                nodes[index].alone = true
                joinByUID[nodes[index].node.uid] = report.joins.count
                report.joins.append(SimulationReport.Join(node: index, at: .zero))
            }
            // A formed cluster's nodes have been ticking for a while, each at its own phase; nodes
            // started together tick at once (the membership actor's first tick dials the
            // seeds), a few milliseconds apart as processes launched one after another.
            let start = settings.formed ? randomPhase() : Int64(generator.next() % 5_000_000)
            queue.push(.tick(node: index, uid: nodes[index].node.uid), at: start)
        }
    }

    /// The virtual time.
    public var now: Duration { .nanoseconds(nowNanoseconds) }

    /// Nodes started so far (the initial ones and every join).
    public var nodeCount: Int { nodes.count }

    /// Whether node `index` is running (up or paused), not killed or vanished.
    public func isRunning(_ index: Int) -> Bool { nodes[index].isRunning }

    /// What node `index` knows of the others (its current run's view).
    public func view(of index: Int) -> [ClusterNode: ClusterMemberStatus] { nodes[index].machine.membership }

    /// Node `index`'s current identity.
    public func member(_ index: Int) -> ClusterNode { nodes[index].node }

    /// Schedules `fault` at the virtual time `at` (not before now).
    public func schedule(_ fault: SimulatedFault, at: Duration) {
        queue.push(.fault(fault), at: max(nowNanoseconds, at.simulatedNanoseconds))
    }

    public func schedule(_ faults: [ScheduledFault]) {
        for scheduled in faults { schedule(scheduled.fault, at: scheduled.at) }
    }

    /// Runs every event due up to `end`, then sets the clock to it.
    public func run(until end: Duration) {
        let endNanoseconds = end.simulatedNanoseconds
        while let next = queue.nextTime, next <= endNanoseconds {
            let entry = queue.pop()!
            nowNanoseconds = entry.time
            report.eventsProcessed += 1
            handle(entry.payload)
        }
        accountUptime(until: max(nowNanoseconds, endNanoseconds))
        nowNanoseconds = max(nowNanoseconds, endNanoseconds)
        report.simulated = now
    }

    public func run(for duration: Duration) { run(until: now + duration) }

    // MARK: Events

    private func handle(_ event: Event) {
        switch event {
        case .tick(let index, let uid):
            guard nodes[index].node.uid == uid, case .up = nodes[index].state else { return }
            carryOut(nodes[index].machine.tick(now: localTime(of: index)), by: index)
            dialSeeds(index)
            queue.push(.tick(node: index, uid: uid), at: nowNanoseconds + tickNanoseconds)
        case .handshake(SimulatedConnection.strangerIndex, _, let connection, let envelope):
            strangerReceives(envelope, on: connection)
        case .handshakeDeadline(let connection):
            if let timedOut = connections[connection] { closeConnection(timedOut, number: connection) }
        case .registrationChurn(let index, let uid):
            guard nodes[index].node.uid == uid, nodes[index].isRunning else { return }
            if case .up = nodes[index].state { churnRegistrations(index) }
            scheduleChurn(index)
        case .deliver(let index, let uid, _, _), .handshake(let index, let uid, _, _), .refused(let index, let uid, _),
            .superseded(let index, let uid, _), .connectionLost(let index, let uid, _),
            .receptionist(let index, let uid, _, _):
            guard nodes[index].node.uid == uid else { return }
            switch nodes[index].state {
            case .up: deliver(event, to: index)
            case .paused: nodes[index].held.append(event)
            case .killed, .vanished, .removed: return
            }
        case .resume(let index, let uid):
            guard nodes[index].node.uid == uid, case .paused = nodes[index].state else { return }
            nodes[index].state = .up
            trace.record(nowNanoseconds, "node \(index) resumes")
            let held = nodes[index].held
            nodes[index].held = []
            for event in held { deliver(event, to: index) }
            queue.push(.tick(node: index, uid: uid), at: nowNanoseconds)
        case .fault(let fault):
            apply(fault)
        }
    }

    /// An event for a node that is up.
    private func deliver(_ event: Event, to index: Int) {
        let now = localTime(of: index)
        switch event {
        case .deliver(_, _, let sender, let message):
            carryOut(nodes[index].machine.receive(message, from: sender, now: now), by: index)
        case .handshake(_, _, let connection, let envelope):
            handshakeReceived(envelope, on: connection, at: index)
        case .receptionist(_, _, let sender, let update):
            receptionistReceived(update, from: sender, at: index)
        case .refused(_, _, let member):
            carryOut(nodes[index].machine.confirmUnreachable(member, now: now), by: index)
        case .superseded(_, _, let member):
            carryOut(nodes[index].machine.markDown(member, now: now), by: index)
        case .connectionLost(_, _, let member):
            nodes[index].peers.remove(member.uid)
            // As TroupeCluster's membership actor: redial a member still alive here at once.
            if case .alive? = nodes[index].machine.status(of: member) {
                send(.ping(sequence: 0, gossip: []), from: index, to: member)
            }
        case .tick, .resume, .fault, .handshakeDeadline, .registrationChurn:
            break
        }
    }

    func carryOut(_ directives: [SWIMDirective], by index: Int) {
        for directive in directives {
            switch directive {
            case .send(let message, let member): send(message, from: index, to: member)
            case .event(let event): observe(event, by: index)
            case .discovered(let member): dial(member, from: index)
            case .measured, .measuredIndirectly: break
            }
        }
    }

    // MARK: The network's part

    private func send(_ message: SWIMMessage, from index: Int, to member: ClusterNode) {
        report.messagesSent += 1
        report.bytesSent += message.wireFrameSize
        let newPeer = nodes[index].peers.insert(member.uid).inserted
        guard let target = indexByUID[member.uid] else { return }  // a made-up member: the dial fails
        let sender = nodes[index].node
        guard nodes[target].node.uid == member.uid else {
            // Another run of the node listens at the address now (or nothing does).
            answerForAddress(of: target, dialledBy: index, about: member)
            return
        }
        switch nodes[target].state {
        case .killed, .removed:
            if let rtt = network.roundTrip(between: index, and: target, using: &generator) {
                queue.push(.refused(node: index, uid: sender.uid, member: member), at: nowNanoseconds + rtt)
            }
        case .vanished:
            return
        case .up, .paused:
            if nodes[target].machine.status(of: sender) == .down {
                // The member closed their connection when it marked the sender down, and
                // refuses a new one with a proved "you are down": this message dials, and the
                // sender learns at the handshake. The message itself is not read.
                connect(from: index, to: target, dialled: member)
                return
            }
            // The first message between the two stands for their association (whether or not
            // this message gets through): each sends its receptionist snapshot, as on a handshake.
            if newPeer { sendSnapshot(from: index, to: target) }
            if nodes[target].peers.insert(sender.uid).inserted { sendSnapshot(from: target, to: index) }
            guard var at = network.arrival(from: index, to: target, now: nowNanoseconds, using: &generator) else {
                return
            }
            // An overloaded node reads each message late, in order: after its backlog drains.
            if nodes[target].slowUntil > at {
                at += nodes[target].slowBy
                nodes[target].backlogUntil = max(nodes[target].backlogUntil, at)
            } else if nodes[target].backlogUntil > at {
                at = nodes[target].backlogUntil
            }
            queue.push(.deliver(node: target, uid: member.uid, from: sender, message: message), at: at)
        }
    }

    /// A dial of `member`'s address, where node `target` has moved on to another run: a
    /// connection to the new run shows it at once (as TroupeCluster's association table does),
    /// else a handshake with it does (or the dial is refused, or goes unanswered).
    private func answerForAddress(of target: Int, dialledBy index: Int, about member: ClusterNode) {
        if nodes[target].isRunning && nodes[index].peers.contains(nodes[target].node.uid) {
            queue.push(.superseded(node: index, uid: nodes[index].node.uid, member: member), at: nowNanoseconds)
            return
        }
        connect(from: index, to: target, dialled: member)
    }

    /// Gossip named `member`: dial it; each end joins the other when its handshake completes
    /// (the connection's round trip, then hello, challenge, proof).
    private func dial(_ member: ClusterNode, from index: Int) {
        guard let target = indexByUID[member.uid] else { return }
        guard nodes[target].node.uid == member.uid else {
            answerForAddress(of: target, dialledBy: index, about: member)
            return
        }
        connect(from: index, to: target, dialled: member)
    }

    // MARK: Faults

    private func apply(_ fault: SimulatedFault) {
        lastFaultAt = nowNanoseconds
        trace.record(nowNanoseconds, "\(fault)")
        switch fault {
        case .kill(let index), .vanish(let index):
            guard nodes.indices.contains(index), nodes[index].isRunning else { return }
            let silent: Bool
            if case .vanish = fault { silent = true } else { silent = false }
            crash(index, silently: silent)
        case .restart(let index):
            guard nodes.indices.contains(index), !nodes[index].isRunning else { return }
            accountUptime(until: nowNanoseconds)
            // What was still sent to the last run after it ended is no connection of this one.
            network.closeLinks(of: index)
            nodes[index] = makeNode(index: index, host: nodes[index].node.host)
            startRegistrations(index, inFormedCluster: false)
            joinThroughALiveNode(index)
        case .pause(let index, let duration):
            guard nodes.indices.contains(index), case .up = nodes[index].state else { return }
            let until = nowNanoseconds + max(0, duration.simulatedNanoseconds)
            nodes[index].state = .paused(since: nowNanoseconds, until: until)
            nodes[index].pauses.append((nowNanoseconds, until))
            queue.push(.resume(node: index, uid: nodes[index].node.uid), at: until)
        case .slow(let index, let delay, let duration):
            guard nodes.indices.contains(index), nodes[index].isRunning else { return }
            nodes[index].slowUntil = nowNanoseconds + max(0, duration.simulatedNanoseconds)
            nodes[index].slowBy = max(0, delay.simulatedNanoseconds)
        case .partition(let group, let oneWay):
            closePartition()
            network.cut(Set(group), oneWay: oneWay)
            partitions.append((nowNanoseconds, nil))
        case .heal:
            closePartition()
            network.heal()
        case .loss(let loss):
            network.loss = min(1, max(0, loss))
        case .join:
            accountUptime(until: nowNanoseconds)
            nodes.append(makeNode(index: nodes.count, host: Self.host(nodes.count)))
            startRegistrations(nodes.count - 1, inFormedCluster: false)
            joinThroughALiveNode(nodes.count - 1)
        case .stranger(let index, let tactic):
            guard nodes.indices.contains(index), nodes[index].isRunning else { return }
            strangerDials(index, tactic)
        }
    }

    private func closePartition() {
        if let last = partitions.indices.last, partitions[last].end == nil { partitions[last].end = nowNanoseconds }
    }

    func crash(_ index: Int, silently: Bool) {
        accountUptime(until: nowNanoseconds)
        let member = nodes[index].node
        nodes[index].state = silently ? .vanished : .killed
        nodes[index].held = []
        var record = SimulationReport.Crash(node: index, at: now, silent: silently)
        // Those that know it and have it up: a run that never heard of it (an island yet to meet
        // the crashed node's) has nothing to see, nor one that holds it down already (a node
        // declared down during a partition runs on until it learns, and may crash first).
        record.witnesses = nodes.indices.filter {
            guard nodes[$0].isRunning && $0 != index, let status = nodes[$0].machine.status(of: member) else {
                return false
            }
            return status != .down
        }
        record.witnessUIDs = record.witnesses.map { nodes[$0].node.uid }
        crashByUID[member.uid] = report.crashes.count
        report.crashes.append(record)
        guard !silently else {
            // Nobody hears of it, but its machine's connections are gone with it.
            network.closeLinks(of: index)
            return
        }
        closeConnections(of: index)
    }

    /// Node `index`'s process is gone: each peer hears its connection close within a one-way
    /// latency.
    func closeConnections(of index: Int) {
        let member = nodes[index].node
        network.closeLinks(of: index)
        for peer in nodes.indices where nodes[peer].isRunning && nodes[index].peers.contains(nodes[peer].node.uid) {
            let at = nowNanoseconds + network.latency.sample(using: &generator)
            queue.push(.connectionLost(node: peer, uid: nodes[peer].node.uid, member: member), at: at)
        }
    }

    private func joinThroughALiveNode(_ index: Int) {
        let joiner = nodes[index].node
        joinByUID[joiner.uid] = report.joins.count
        report.joins.append(SimulationReport.Join(node: index, at: now))
        // Its first tick at once, as the membership actor's (it dials the seeds).
        queue.push(.tick(node: index, uid: joiner.uid), at: nowNanoseconds)
        nodes[index].seeds = seedAddresses(for: index)
        nodes[index].alone = true
    }

    /// As TroupeCluster's membership actor: a run that knows no member dials its seeds once a
    /// probe interval; one that does, every 10 probe intervals, the seeds whose current run it
    /// does not know alive (so that islands formed during a partition meet again).
    private func dialSeeds(_ index: Int) {
        if nodes[index].alone && nodes[index].machine.membership.values.contains(where: { $0 != .down }) {
            nodes[index].alone = false
        }
        let interval = settings.membership.probeInterval.simulatedNanoseconds * (nodes[index].alone ? 1 : 10)
        if let last = nodes[index].lastSeedDial, nowNanoseconds - last < interval { return }
        nodes[index].lastSeedDial = nowNanoseconds
        for seed in nodes[index].seeds where nodes[seed].isRunning {
            if case .alive? = nodes[index].machine.status(of: nodes[seed].node) { continue }
            if case .suspect? = nodes[index].machine.status(of: nodes[seed].node) { continue }
            connect(from: index, to: seed, dialled: nil)
        }
    }

    // MARK: Observation

    private func observe(_ event: ClusterMembershipEvent, by observer: Int) {
        let member = event.member
        trace.record(nowNanoseconds, "node \(observer) sees \(nodeName(member)) \(event.status)")
        // TroupeCluster's `memberDown`: the member's listings go.
        if event.status == .down { _ = nodes[observer].receptionist.removeEntries(of: member) }
        if let crash = crashByUID[member.uid] {
            recordDetection(event.status, ofCrash: crash, by: observer)
            return
        }
        guard let index = indexByUID[member.uid], nodes[index].node.uid == member.uid, nodes[index].isRunning else {
            return
        }
        switch event.status {
        case .alive:
            recordAlive(member, by: observer)
        case .suspect:
            report.falseSuspicions += 1
            if !disturbed(index) { report.falseSuspicionsOfHealthyMembers += 1 }
        case .unreachable:
            break
        case .down:
            report.falseDowns += 1
            if !explained(observer: observer, member: index) {
                violate(.falseDown, "node \(observer) declared node \(index) (\(member)) down while it was up")
            }
            // TroupeCluster's `memberDown`: the observer closes their connection; the member
            // hears it and redials, and the refusal tells it (`removedByNotice`).
            network.closeLink(between: observer, and: index)
            if nodes[observer].peers.remove(member.uid) != nil, !network.isCut(from: observer, to: index) {
                queue.push(
                    .connectionLost(node: index, uid: member.uid, member: nodes[observer].node),
                    at: nowNanoseconds + network.latency.sample(using: &generator))
            }
        }
    }

    private func recordDetection(_ status: ClusterMemberStatus, ofCrash crash: Int, by observer: Int) {
        let after = now - report.crashes[crash].at
        switch status {
        case .suspect:
            if report.crashes[crash].firstSuspicion == nil { report.crashes[crash].firstSuspicion = after }
            if report.crashes[crash].suspectedAfter[observer] == nil {
                report.crashes[crash].suspectedAfter[observer] = after
            }
        case .unreachable:
            if report.crashes[crash].unreachableAfter[observer] == nil {
                report.crashes[crash].unreachableAfter[observer] = after
            }
        case .down:
            if report.crashes[crash].unreachableAfter[observer] == nil {
                report.crashes[crash].unreachableAfter[observer] = after
            }
            if report.crashes[crash].downAfter[observer] == nil { report.crashes[crash].downAfter[observer] = after }
        case .alive:
            break
        }
    }

    private func recordAlive(_ member: ClusterNode, by observer: Int) {
        guard let join = joinByUID[member.uid], report.joins[join].convergedAfter == nil else { return }
        if report.joins[join].seenAliveAfter[observer] == nil {
            report.joins[join].seenAliveAfter[observer] = now - report.joins[join].at
        }
        let joiner = report.joins[join].node
        let others = nodes.indices.filter { $0 != joiner && nodes[$0].isRunning }
        if others.allSatisfy({ report.joins[join].seenAliveAfter[$0] != nil }) {
            report.joins[join].convergedAfter = now - report.joins[join].at
        }
    }

    /// Whether a pause (beyond the limit) of either node, or a partition, within the horizon
    /// explains why `observer` doubted `member`.
    private func explained(observer: Int, member: Int) -> Bool {
        let since = nowNanoseconds - explanationHorizon
        for index in [observer, member] {
            for pause in nodes[index].pauses
            where pause.until >= since && pause.until - pause.start > pauseLimitNanoseconds {
                return true
            }
        }
        return partitions.contains { ($0.end ?? .max) >= since }
    }

    /// Whether node `index` was paused or overloaded within the explanation horizon: a member
    /// that was not is healthy, and suspecting it is the observer's mistake.
    private func disturbed(_ index: Int) -> Bool {
        let since = nowNanoseconds - explanationHorizon
        return nodes[index].slowUntil >= since || nodes[index].pauses.contains { $0.until >= since }
    }

    func violate(_ kind: SimulationReport.Violation.Kind, _ detail: String) {
        trace.record(nowNanoseconds, "VIOLATION \(kind.rawValue): \(detail)")
        report.violations.append(SimulationReport.Violation(kind: kind, at: now, detail: detail))
    }

    // MARK: Checks at the end

    /// Checks what must hold once the faults are over: every crash seen down within the
    /// detection limit by every node up throughout (those it can be checked for: crashed at
    /// least the limit before now, with no partition since), and, when the last fault is at
    /// least `settle` before now, every running node sees every other running node alive.
    /// Adds what fails to the report's violations; returns them.
    @discardableResult
    public func checkSettled(after settle: Duration) -> [SimulationReport.Violation] {
        let before = report.violations.count
        let limit = settings.detectionLimit ?? settings.detectionBound
        for crash in report.crashes where now - crash.at >= limit {
            let crashEnd = crash.at.simulatedNanoseconds + limit.simulatedNanoseconds
            guard
                !partitions.contains(where: {
                    ($0.end ?? .max) >= crash.at.simulatedNanoseconds && $0.start <= crashEnd
                })
            else { continue }
            for (witness, uid) in zip(crash.witnesses, crash.witnessUIDs)
            where nodes[witness].node.uid == uid && nodes[witness].isRunning && !wasPaused(witness, since: crash.at) {
                guard let seen = crash.downAfter[witness], seen <= limit else {
                    violate(
                        .undetectedCrash,
                        "node \(witness) had not seen node \(crash.node) down \(limit) after it crashed at \(crash.at)")
                    continue
                }
            }
        }
        if nowNanoseconds - lastFaultAt >= settle.simulatedNanoseconds {
            let running = nodes.indices.filter { nodes[$0].isRunning }
            for observer in running {
                let view = nodes[observer].machine
                for other in running where other != observer {
                    let status = view.status(of: nodes[other].node)
                    if case .alive? = status { continue }
                    violate(
                        .notConverged,
                        "node \(observer) sees node \(other) (\(nodes[other].node)) as \(status.map { "\($0)" } ?? "unknown") \(settle) after the last fault"
                    )
                }
            }
            checkListings()
        }
        return Array(report.violations[before...])
    }

    private func wasPaused(_ index: Int, since: Duration) -> Bool {
        nodes[index].pauses.contains { $0.until >= since.simulatedNanoseconds }
    }

    // MARK: Nodes

    private func makeNode(index: Int, host: String) -> SimulatedNode {
        var uid = generator.next()
        while uid == 0 || indexByUID[uid] != nil { uid = generator.next() }
        indexByUID[uid] = index
        let member = ClusterNode(host: host, port: 7_337, uid: uid)
        let drift = (generator.nextUnit() * 2 - 1) * settings.maximumClockDrift
        let offset = Int64((generator.nextUnit() * 2 - 1) * Double(settings.maximumClockOffset.simulatedNanoseconds))
        let node = SimulatedNode(
            node: member,
            machine: SWIMStateMachine(myself: member, settings: settings.membership, seed: generator.next()),
            clockRate: 1 + drift, clockOffset: offset, startedAt: nowNanoseconds)
        return node
    }

    /// A node's configured seeds: five addresses of the first nodes, as a deployment lists them.
    private func seedAddresses(for index: Int) -> [Int] {
        var candidates = Array(0..<settings.nodes).filter { $0 != index }
        candidates.shuffle(using: &generator)
        return Array(candidates.prefix(5))
    }

    private func randomPhase() -> Int64 { Int64(generator.next() % UInt64(tickNanoseconds)) }

    /// Node `index`'s clock now: its offset plus the virtual time at its rate (never negative:
    /// the state machine measures intervals only).
    func localTime(of index: Int) -> Duration {
        let node = nodes[index]
        let local =
            node.clockOffset + Int64(Double(nowNanoseconds) * node.clockRate)
            + settings.maximumClockOffset.simulatedNanoseconds
        return .nanoseconds(local)
    }

    func accountUptime(until end: Int64) {
        for index in nodes.indices where nodes[index].isRunning {
            report.nodeSeconds += Double(end - nodes[index].accountedUntil) / 1e9
            nodes[index].accountedUntil = end
        }
    }

    func nodeName(_ member: ClusterNode) -> String {
        guard let index = indexByUID[member.uid] else { return "\(member)" }
        return nodes[index].node.uid == member.uid ? "node \(index)" : "node \(index)'s earlier run"
    }

    static func host(_ index: Int) -> String { "10.\(index >> 16 & 255).\(index >> 8 & 255).\(index & 255)" }
}
