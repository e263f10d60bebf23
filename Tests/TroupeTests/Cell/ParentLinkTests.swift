import Foundation
import Testing
import TroupeTestSupport

@testable import Troupe

/// A child holds its parent strongly (a weak link would give every parent a side table), and
/// the parent holds its children: the cycle must be broken however the family ends, so both
/// cells are freed once both actors have stopped and no ref remains.
@Suite struct ParentLinkTests {
    /// A weak reference to a cell, to see it freed.
    final class WeakCell: Sendable {
        // Safety (for Sendable): written once in `init`; a weak load is atomic in the runtime.
        nonisolated(unsafe) weak var cell: AnyCell?
        init(_ cell: AnyCell) { self.cell = cell }
        var isFreed: Bool { cell == nil }
    }

    /// Spawns a child of its own kind on `.spawnChild` and `.stop` stops it. On
    /// `.spawnWhenRefused`, waits until the system refuses spawns (it is shutting down), spawns a
    /// child anyway, drops its ref, and records whether that child's cell is already freed while
    /// this parent still runs.
    struct Family: ActorDefinition {
        enum Message: Sendable {
            case spawnChild(Reply<ActorRef<Message>>)
            /// Whether this cell's parent link is `parent`, read on its own turn (its owner).
            case linksTo(AnyCell, Reply<Bool>)
            case stop
            case spawnWhenRefused(Recorder<Bool>)
        }

        func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .spawnChild(let reply): reply.succeed(context.spawn(Family()))
            case .linksTo(let parent, let reply): reply.succeed(context.cell.extras?.parent === parent)
            case .stop: context.stop()
            case .spawnWhenRefused(let freedAtOnce):
                while context.system.isAccepting { usleep(1_000) }
                let child = WeakCell(context.spawn(Family()).cell)
                freedAtOnce.append(child.isFreed)
            }
        }
    }

    enum Ending { case childStops, parentStops, shutdownStopsBoth }

    /// Spawns a parent and one child through `context.spawn`, starts `ending`, and returns weak
    /// views of both cells (the refs are dropped on return).
    func family(in system: ActorSystem, _ ending: Ending) async throws -> (parent: WeakCell, child: WeakCell) {
        let parent = system.spawn(Family())
        let child = try await parent.ask(timeout: .seconds(10)) { .spawnChild($0) }
        // Read on the child's turn: `extras` belongs to the holder of the scheduling right (read
        // from this task, TSan saw no order with the spawn's write: the ask's resumption runs
        // in the uninstrumented runtime).
        #expect(try await child.ask(timeout: .seconds(10)) { .linksTo(parent.cell, $0) })
        switch ending {
        case .childStops: child.tell(.stop)
        case .parentStops: parent.tell(.stop)
        case .shutdownStopsBoth: break
        }
        return (WeakCell(parent.cell), WeakCell(child.cell))
    }

    @Test(arguments: [Ending.childStops, .parentStops])
    func bothAreFreedWhicheverStopsFirst(_ ending: Ending) async throws {
        let system = ActorSystem(configuration: .init(workerCount: 2, pinWorkers: false, logger: quietLogger))
        let (parent, child) = try await family(in: system, ending)
        await waitUntil("the child was freed") { child.isFreed }
        // The parent lives on without its child: the link went with the child.
        if ending == .childStops { #expect(!parent.isFreed) }
        await system.shutdown()
        await waitUntil("the parent was freed") { parent.isFreed }
    }

    @Test func aFamilyStoppedByShutdownIsFreed() async throws {
        let system = ActorSystem(configuration: .init(workerCount: 2, pinWorkers: false, logger: quietLogger))
        let (parent, child) = try await family(in: system, .shutdownStopsBoth)
        await system.shutdown()
        await waitUntil("both were freed") { parent.isFreed && child.isFreed }
    }

    /// A stopped child that is still referenced lets its parent go: the link is cleared when the
    /// child stops, not when its cell is freed.
    @Test func aStoppedChildStillReferencedDoesNotKeepItsParent() async throws {
        let system = ActorSystem(configuration: .init(workerCount: 2, pinWorkers: false, logger: quietLogger))
        let parentRef = system.spawn(Family())
        let child = try await parentRef.ask(timeout: .seconds(10)) { .spawnChild($0) }
        let parent = WeakCell(parentRef.cell)
        parentRef.tell(.stop)
        _ = consume parentRef
        await waitUntil("the parent was freed while its child's ref is held") { parent.isFreed }
        #expect(child.cell.isStopped)
        await system.shutdown()
    }

    /// A child spawned while the system shuts down never runs: it leaves its parent's family at
    /// once, so it is freed with its last ref while the parent still runs.
    @Test func aChildRefusedDuringShutdownLeavesItsParentAtOnce() async throws {
        let system = ActorSystem(configuration: .init(workerCount: 2, pinWorkers: false, logger: quietLogger))
        let freedAtOnce = Recorder<Bool>()
        let parentRef = system.spawn(Family())
        parentRef.tell(.spawnWhenRefused(freedAtOnce))
        let parent = WeakCell(parentRef.cell)
        _ = consume parentRef
        await system.shutdown()
        #expect(freedAtOnce.values == [true])
        await waitUntil("the parent was freed") { parent.isFreed }
    }
}
