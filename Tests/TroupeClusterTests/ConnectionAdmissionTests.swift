import Testing

@testable import TroupeCluster

/// Admission control and the warning limiter as pure values: each limit refuses exactly the
/// connection past it, and every release gives its place back.
struct ConnectionAdmissionTests {
    let start = ContinuousClock.now

    @Test func unauthenticatedConnectionsAreCappedInAllAndPerHost() throws {
        var admission = ConnectionAdmission(
            limits: ClusterConnectionLimits(
                maximumUnauthenticatedConnections: 5, maximumUnauthenticatedConnectionsPerHost: 2,
                handshakesPerSecondPerHost: 1000))
        let a1 = try admission.admitInbound(host: "a", now: start).get()
        _ = try admission.admitInbound(host: "a", now: start).get()
        #expect(throws: ConnectionAdmission.Refusal.tooManyUnauthenticatedFromHost(2)) {
            try admission.admitInbound(host: "a", now: start).get()
        }
        _ = try admission.admitInbound(host: "b", now: start).get()
        _ = try admission.admitInbound(host: "b", now: start).get()
        _ = try admission.admitInbound(host: "c", now: start).get()
        #expect(throws: ConnectionAdmission.Refusal.tooManyUnauthenticated(5)) {
            try admission.admitInbound(host: "d", now: start).get()
        }
        // A handshake completes: its place is free for another host, and for its own.
        admission.authenticated(a1)
        _ = try admission.admitInbound(host: "a", now: start).get()
        #expect(admission.unauthenticated == 5)
        #expect(admission.open == 6)
        #expect(admission.refused == 2)
        // The authenticated one closes: only the total drops.
        admission.closed(a1, wasAuthenticated: true)
        #expect(admission.open == 5)
        #expect(admission.unauthenticated == 5)
    }

    @Test func theTotalCapsBothDirections() throws {
        var admission = ConnectionAdmission(
            limits: ClusterConnectionLimits(maximumConnections: 3, handshakesPerSecondPerHost: 1000))
        let inbound = try admission.admitInbound(host: "a", now: start).get()
        _ = try admission.admitOutbound(host: "x").get()
        _ = try admission.admitOutbound(host: "y").get()
        #expect(throws: ConnectionAdmission.Refusal.tooManyConnections(3)) {
            try admission.admitOutbound(host: "z").get()
        }
        #expect(throws: ConnectionAdmission.Refusal.tooManyConnections(3)) {
            try admission.admitInbound(host: "b", now: start).get()
        }
        admission.closed(inbound, wasAuthenticated: false)
        #expect(admission.unauthenticated == 0)
        _ = try admission.admitOutbound(host: "z").get()
    }

    @Test func handshakesPerHostAreRateLimitedAndRefill() throws {
        var admission = ConnectionAdmission(
            limits: ClusterConnectionLimits(
                maximumUnauthenticatedConnections: 1000, maximumUnauthenticatedConnectionsPerHost: 1000,
                handshakesPerSecondPerHost: 5))
        // A burst of twice the rate, then refusals.
        for _ in 0..<10 {
            let ticket = try admission.admitInbound(host: "a", now: start).get()
            admission.closed(ticket, wasAuthenticated: false)
        }
        #expect(throws: ConnectionAdmission.Refusal.handshakeRate(5)) {
            try admission.admitInbound(host: "a", now: start).get()
        }
        // Another host is not affected; a second later, five more tokens.
        _ = try admission.admitInbound(host: "b", now: start).get()
        for _ in 0..<5 {
            let ticket = try admission.admitInbound(host: "a", now: start + .seconds(1)).get()
            admission.closed(ticket, wasAuthenticated: false)
        }
        #expect(throws: ConnectionAdmission.Refusal.handshakeRate(5)) {
            try admission.admitInbound(host: "a", now: start + .seconds(1)).get()
        }
    }

    @Test func manyHostsCostBoundedMemory() throws {
        var admission = ConnectionAdmission(
            limits: ClusterConnectionLimits(
                maximumUnauthenticatedConnections: 100_000, maximumUnauthenticatedConnectionsPerHost: 10,
                handshakesPerSecondPerHost: 1))
        var refused = 0
        for host in 0..<(ConnectionAdmission.maximumTrackedHosts + 100) {
            switch admission.admitInbound(host: "10.0.\(host / 256).\(host % 256)", now: start) {
            case .success(let ticket): admission.closed(ticket, wasAuthenticated: false)
            case .failure: refused += 1
            }
        }
        // Buckets not yet refilled cannot be forgotten: the hosts past the table are refused.
        #expect(refused == 100)
        // Once they have refilled, new hosts are admitted again.
        let later = try admission.admitInbound(host: "192.0.2.1", now: start + .seconds(10)).get()
        admission.closed(later, wasAuthenticated: false)
    }

    @Test func warningsAreLimitedPerKindWithACount() {
        var limiter = WarningLimiter(interval: .seconds(10))
        #expect(limiter.admit("handshake", now: start) == (true, 0))
        for _ in 0..<99 { #expect(limiter.admit("handshake", now: start + .seconds(1)).log == false) }
        #expect(limiter.admit("violation", now: start + .seconds(1)) == (true, 0))
        #expect(limiter.admit("handshake", now: start + .seconds(11)) == (true, 99))
        #expect(limiter.admit("handshake", now: start + .seconds(12)).log == false)
    }
}
