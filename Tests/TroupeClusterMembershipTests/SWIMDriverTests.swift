import Testing
import TroupeClusterMembership

/// The state machine driven as the product's documentation shows a user driving it, through
/// its public API only (this file does not import it `@testable`): a caller that owns the
/// clock and the network, feeds ticks and messages in, and carries out the directives.
@Suite struct SWIMDriverTests {
    /// Two members on an instant network; one stops answering, and the other sees it suspect,
    /// unreachable and then down, in that order and within the timeouts the settings imply.
    @Test func aCallerThatCarriesOutTheDirectivesSeesACrashedMemberGoDown() throws {
        var driver = TwoMemberDriver()
        driver.run(until: .seconds(5))
        #expect(driver.events[driver.a]?.map(\.status) ?? [] == [.alive(incarnation: 0)], "b joined a")
        #expect(driver.nodes[driver.a]?.status(of: driver.b) == .alive(incarnation: 0))
        #expect(driver.nodes[driver.b]?.status(of: driver.a) == .alive(incarnation: 0))

        driver.crashed = driver.b
        let crashedAt = driver.now
        driver.run(until: crashedAt + .seconds(40))
        let seen = driver.events[driver.a] ?? []
        #expect(
            seen.map(\.status) == [
                .alive(incarnation: 0), .suspect(incarnation: 0), .unreachable(incarnation: 0), .down,
            ],
            "\(seen)")
        #expect(driver.nodes[driver.a]?.status(of: driver.b) == .down)
        // Down no later than a probe period, the longest suspicion timeout, `downAfter`, and a
        // tick each: what the settings promise a caller.
        let settings = ClusterMembershipSettings()
        let bound =
            settings.probeInterval + settings.suspicionTimeout * settings.suspicionMaximumMultiplier
            + settings.downAfter + .milliseconds(300)
        let downAt = try #require(driver.downAt)
        #expect(downAt - crashedAt <= bound, "down \(downAt - crashedAt) after the crash; the bound is \(bound)")
    }
}

/// The documentation's driver loop: every 100 ms of virtual time each live member is ticked and
/// the messages sent since are delivered (none to or from the crashed member).
private struct TwoMemberDriver {
    let a = ClusterNode(host: "10.0.0.1", port: 7337, uid: 1)
    let b = ClusterNode(host: "10.0.0.2", port: 7337, uid: 2)
    var nodes: [ClusterNode: SWIMStateMachine] = [:]
    var inFlight: [(message: SWIMMessage, from: ClusterNode, to: ClusterNode)] = []
    var events: [ClusterNode: [ClusterMembershipEvent]] = [:]
    var crashed: ClusterNode?
    var downAt: Duration?
    var now = Duration.zero

    init() {
        nodes[a] = SWIMStateMachine(myself: a, seed: 1)
        nodes[b] = SWIMStateMachine(myself: b, seed: 2)
        carryOut(nodes[b]!.join([a], now: now), by: b)
    }

    mutating func run(until end: Duration) {
        while now < end {
            now += .milliseconds(100)
            for member in [a, b] where member != crashed {
                carryOut(nodes[member]!.tick(now: now), by: member)
            }
            while !inFlight.isEmpty {
                let (message, sender, receiver) = inFlight.removeFirst()
                guard sender != crashed, receiver != crashed else { continue }
                carryOut(nodes[receiver]!.receive(message, from: sender, now: now), by: receiver)
            }
        }
    }

    private mutating func carryOut(_ directives: [SWIMDirective], by member: ClusterNode) {
        for directive in directives {
            switch directive {
            case .send(let message, let receiver):
                inFlight.append((message, member, receiver))
            case .event(let event):
                events[member, default: []].append(event)
                if event.status == .down, downAt == nil { downAt = now }
            case .discovered, .measured, .measuredIndirectly:
                break  // a two-member cluster discovers no one; round trips are statistics
            }
        }
    }
}
