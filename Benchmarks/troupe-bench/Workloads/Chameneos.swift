// Chameneos (Savina `chameneos`): 100 chameneos of three colours meet pairwise through a broker
// (the mall) until M meetings took place; each partner takes the complement of the two colours.
// Verified: the mall arranged exactly M meetings, the chameneos counted 2·M between them, and
// none met itself. One unit is one meeting (4 messages: two requests to the mall, the mall's
// notice to the first, the first's colour change to the second).
//
// Forms:
// - Troupe: chameneos tell the mall `.meet(self, colour)`; the mall tells the first of a pair
//   `.meet(partner:)`; that one tells its partner `.change(colour)`; both go back to the mall.
// - Swift native (fastest idiomatic form): each chameneo is a task looping on
//   `await mall.meet(id, colour)`; the mall actor parks the first of a pair in an
//   UnsafeContinuation and resumes it when the second arrives.
// - Dispatch: the Troupe protocol with one serial queue per chameneo and one for the mall.

import Dispatch
import Troupe

private enum Colour: UInt8, Sendable {
    case blue, red, yellow

    /// The colour both partners take after a meeting.
    func complement(_ other: Colour) -> Colour {
        self == other ? self : Colour(rawValue: 3 - rawValue - other.rawValue)!
    }

    static func initial(_ index: Int) -> Colour { Colour(rawValue: UInt8(index % 3))! }
}

private struct ChameneosResult: Sendable, Equatable {
    var meetingsArranged = 0
    var meetingsCounted = 0
    var selfMeetings = 0
}

// MARK: Troupe

private struct Mall: ActorDefinition {
    enum Message: Sendable {
        case meet(ActorRef<Chameneo.Message>, id: Int, colour: Colour)
        case report(meetings: Int, selfMeetings: Int)
    }
    var meetingsLeft: Int
    let chameneos: Int
    let done: Completion<ChameneosResult>
    var waiting: (ref: ActorRef<Chameneo.Message>, id: Int, colour: Colour)?
    var result = ChameneosResult()
    var reports = 0

    init(meetings: Int, chameneos: Int, done: Completion<ChameneosResult>) {
        meetingsLeft = meetings
        self.chameneos = chameneos
        self.done = done
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .meet(let ref, let id, let colour):
            if meetingsLeft == 0 {
                ref.tell(.exit)
            } else if let first = waiting {
                waiting = nil
                meetingsLeft -= 1
                result.meetingsArranged += 1
                first.ref.tell(.meet(partner: ref, partnerID: id, colour: colour))
            } else {
                waiting = (ref, id, colour)
            }
        case .report(let meetings, let selfMeetings):
            result.meetingsCounted += meetings
            result.selfMeetings += selfMeetings
            reports += 1
            if reports == chameneos {
                done.complete(result)
                context.stop()
            }
        }
    }
}

private struct Chameneo: ActorDefinition {
    enum Message: Sendable {
        case start
        case meet(partner: ActorRef<Message>, partnerID: Int, colour: Colour)
        case change(colour: Colour, partnerID: Int)
        case exit
    }
    let id: Int
    let mall: ActorRef<Mall.Message>
    var colour: Colour
    var meetings = 0
    var selfMeetings = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .start:
            mall.tell(.meet(context.ref, id: id, colour: colour))
        case .meet(let partner, let partnerID, let other):
            colour = colour.complement(other)
            count(partnerID)
            partner.tell(.change(colour: colour, partnerID: id))
            mall.tell(.meet(context.ref, id: id, colour: colour))
        case .change(let newColour, let partnerID):
            colour = newColour
            count(partnerID)
            mall.tell(.meet(context.ref, id: id, colour: colour))
        case .exit:
            mall.tell(.report(meetings: meetings, selfMeetings: selfMeetings))
            context.stop()
        }
    }

    private mutating func count(_ partnerID: Int) {
        meetings += 1
        if partnerID == id { selfMeetings += 1 }
    }
}

// MARK: Swift native

private actor NativeMall {
    private var meetingsLeft: Int
    private(set) var meetingsArranged = 0
    private var waiting: (id: Int, colour: Colour, continuation: UnsafeContinuation<(id: Int, colour: Colour)?, Never>)?

    init(meetings: Int) { meetingsLeft = meetings }

    /// Returns the partner, or nil once all meetings took place.
    func meet(id: Int, colour: Colour) async -> (id: Int, colour: Colour)? {
        if meetingsLeft == 0 { return nil }
        if let first = waiting {
            waiting = nil
            meetingsLeft -= 1
            meetingsArranged += 1
            first.continuation.resume(returning: (id, colour))
            return (first.id, first.colour)
        }
        return await withUnsafeContinuation { continuation in
            waiting = (id, colour, continuation)
        }
    }
}

/// The native mall on a Troupe serial executor.
private actor ExecutorMall {
    nonisolated let executor: TroupeSerialExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private var meetingsLeft: Int
    private(set) var meetingsArranged = 0
    private var waiting: (id: Int, colour: Colour, continuation: UnsafeContinuation<(id: Int, colour: Colour)?, Never>)?

    init(meetings: Int, executor: TroupeSerialExecutor) {
        self.executor = executor
        meetingsLeft = meetings
    }

    /// Returns the partner, or nil once all meetings took place.
    func meet(id: Int, colour: Colour) async -> (id: Int, colour: Colour)? {
        if meetingsLeft == 0 { return nil }
        if let first = waiting {
            waiting = nil
            meetingsLeft -= 1
            meetingsArranged += 1
            first.continuation.resume(returning: (id, colour))
            return (first.id, first.colour)
        }
        return await withUnsafeContinuation { continuation in
            waiting = (id, colour, continuation)
        }
    }
}

/// The native form's mall, on Swift's default executor or on a Troupe serial executor.
private protocol ChameneosMall: Actor {
    func meet(id: Int, colour: Colour) async -> (id: Int, colour: Colour)?
    var meetingsArranged: Int { get }
}

extension NativeMall: ChameneosMall {}
extension ExecutorMall: ChameneosMall {}

/// The native form: one task per chameneo meets at `mall` until the meetings run out.
private func meetAll(at mall: some ChameneosMall, chameneos: Int) async -> ChameneosResult {
    var result = ChameneosResult()
    await withTaskGroup(of: (meetings: Int, selfMeetings: Int).self) { group in
        for id in 0..<chameneos {
            group.addTask {
                var colour = Colour.initial(id)
                var count = 0
                var selfMeetings = 0
                while let partner = await mall.meet(id: id, colour: colour) {
                    colour = colour.complement(partner.colour)
                    count += 1
                    if partner.id == id { selfMeetings += 1 }
                }
                return (count, selfMeetings)
            }
        }
        for await counts in group {
            result.meetingsCounted += counts.meetings
            result.selfMeetings += counts.selfMeetings
        }
    }
    result.meetingsArranged = await mall.meetingsArranged
    return result
}

// MARK: Dispatch

private struct DispatchMallState {
    var meetingsLeft: Int
    var waiting: (chameneo: QueueActor<DispatchChameneoState>, id: Int, colour: Colour)?
    var result = ChameneosResult()
    var reports = 0
}

private struct DispatchChameneoState {
    let id: Int
    var colour: Colour
    var meetings = 0
    var selfMeetings = 0
}

func chameneosRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.chameneos
    let chameneos = config.chameneos
    var rows = RowSet(config, workload)
    @Sendable func check(_ result: ChameneosResult, _ meetings: Int, _ row: Row) {
        row.expect(result.meetingsArranged, meetings, "meetings arranged by the mall")
        row.expect(result.meetingsCounted, 2 * meetings, "meetings counted by the chameneos")
        row.expect(result.selfMeetings, 0, "meetings of a chameneo with itself")
    }

    rows.measure(BenchSystem.swiftNative, family: .native) { meetings, row in
        runBlocking {
            let mall = NativeMall(meetings: meetings)
            let stopwatch = Stopwatch()
            let result = await meetAll(at: mall, chameneos: chameneos)
            let window = stopwatch.stop()
            check(result, meetings, row)
            return row.measurement(
                window, units: meetings,
                note: "\(chameneos) tasks await mall.meet(); first of a pair parked in a continuation")
        }
    }

    let onTroupe = BenchSystem.nativeOnTroupeExecutors
    rows.measure(onTroupe, family: .native) { meetings, row in
        let system = troupe.system
        return runBlocking(on: system.taskExecutor) {
            let mall = ExecutorMall(meetings: meetings, executor: system.makeSerialExecutor())
            let stopwatch = Stopwatch()
            let result = await meetAll(at: mall, chameneos: chameneos)
            let window = stopwatch.stop()
            check(result, meetings, row)
            return row.measurement(
                window, units: meetings,
                note:
                    "the native form: the mall on a TroupeSerialExecutor, \(chameneos) tasks on the task executor; \(troupe.workersNote)"
            )
        }
    }

    rows.measure(BenchSystem.dispatch, family: .dispatch) { meetings, row in
        let done = Completion<ChameneosResult>()
        let mall = QueueActor("bench.mall", DispatchMallState(meetingsLeft: meetings))
        // Each function runs on the queue of its first argument.
        @Sendable func arrive(
            _ mall: QueueActor<DispatchMallState>, _ who: QueueActor<DispatchChameneoState>, _ id: Int,
            _ colour: Colour
        ) {
            if mall.state.meetingsLeft == 0 {
                who.tell { leave($0) }
            } else if let first = mall.state.waiting {
                mall.state.waiting = nil
                mall.state.meetingsLeft -= 1
                mall.state.result.meetingsArranged += 1
                first.chameneo.tell { meet($0, partner: who, partnerID: id, colour: colour) }
            } else {
                mall.state.waiting = (who, id, colour)
            }
        }
        @Sendable func meet(
            _ me: QueueActor<DispatchChameneoState>, partner: QueueActor<DispatchChameneoState>, partnerID: Int,
            colour: Colour
        ) {
            me.state.colour = me.state.colour.complement(colour)
            me.state.meetings += 1
            if partnerID == me.state.id { me.state.selfMeetings += 1 }
            let (id, newColour) = (me.state.id, me.state.colour)
            partner.tell { change($0, colour: newColour, partnerID: id) }
            mall.tell { arrive($0, me, id, newColour) }
        }
        @Sendable func change(_ me: QueueActor<DispatchChameneoState>, colour: Colour, partnerID: Int) {
            me.state.colour = colour
            me.state.meetings += 1
            if partnerID == me.state.id { me.state.selfMeetings += 1 }
            let id = me.state.id
            mall.tell { arrive($0, me, id, colour) }
        }
        @Sendable func leave(_ me: QueueActor<DispatchChameneoState>) {
            let (count, selfMeetings) = (me.state.meetings, me.state.selfMeetings)
            mall.tell { mall in
                mall.state.result.meetingsCounted += count
                mall.state.result.selfMeetings += selfMeetings
                mall.state.reports += 1
                if mall.state.reports == chameneos { done.complete(mall.state.result) }
            }
        }
        let all = (0..<chameneos).map {
            QueueActor("bench.chameneo\($0)", DispatchChameneoState(id: $0, colour: .initial($0)))
        }
        let stopwatch = Stopwatch()
        for (id, chameneo) in all.enumerated() {
            let colour = Colour.initial(id)
            mall.tell { arrive($0, chameneo, id, colour) }
        }
        let result = done.wait("Chameneos / Dispatch")
        let window = stopwatch.stop()
        check(result, meetings, row)
        return row.measurement(
            window, units: meetings, note: "Savina protocol, a serial queue per chameneo and for the mall")
    }

    rows.measure(BenchSystem.troupe, family: .troupe) { meetings, row in
        let system = troupe.system
        let done = Completion<ChameneosResult>()
        let deadLetters = system.deadLetters.total
        let mall = system.spawn(Mall(meetings: meetings, chameneos: chameneos, done: done))
        let all = (0..<chameneos).map { id in system.spawn(Chameneo(id: id, mall: mall, colour: .initial(id))) }
        let stopwatch = Stopwatch()
        for chameneo in all { chameneo.tell(.start) }
        let result = done.wait("Chameneos / Troupe")
        let window = stopwatch.stop()
        check(result, meetings, row)
        row.expect(system.deadLetters.total - deadLetters, 0, "dead letters")
        return row.measurement(
            window, units: meetings, note: "Savina protocol, tell only; \(troupe.workersNote)")
    }

    return rows.measured
}
