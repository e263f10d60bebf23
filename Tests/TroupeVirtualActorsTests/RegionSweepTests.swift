import Testing
import Troupe
import TroupeTestSupport

@testable import TroupeVirtualActors

/// The idle sweep, driven by hand: the region's own sweeper runs every 30 s for a one-hour
/// timeout, so it does not interfere, and no assertion depends on timing.
@Suite struct RegionSweepTests {
    @Test func aSendBetweenSweepsKeepsAnEntityActiveAndEnoughIdleSweepsPassivateIt() async throws {
        try await withTestSystem { system in
            let log = TallyLog()
            let region = try tallies(system, log: log, idleTimeout: .seconds(3_600))
            let needed = try #require(region.idleSweepsToPassivate)
            #expect(needed == 120)
            let cart = region.entity("c")
            for _ in 0..<(2 * Int(needed)) {
                region.sweep()
                cart.tell(.add(1))
            }
            #expect(try await cart.ask { .total($0) } == 2 * Int(needed))
            #expect(region.statistics.idlePassivations == 0)
            // The first sweep sees the last sends; then `needed` sweeps without one.
            for _ in 0..<Int(needed) { region.sweep() }
            #expect(region.statistics.idlePassivations == 0)
            region.sweep()
            #expect(region.statistics.idlePassivations == 1)
            await waitUntil("its stop hook ran") { log.stopped.values == ["c"] }
        }
    }

    @Test func aSweepRetiresAVacantSlotNobodySentTo() async throws {
        try await withTestSystem { system in
            let region = try tallies(system, log: TallyLog(), idleTimeout: .seconds(3_600))
            let unused = region.entity("never")
            #expect(region.statistics.known == 1)
            region.sweep()
            #expect(region.statistics.known == 0)
            // The retired slot's reference still works: it goes through the directory.
            #expect(try await unused.ask { .total($0) } == 0)
            #expect(region.statistics.active == 1 && region.statistics.known == 1)
        }
    }
}
