import Testing

@testable import TroupeVirtualActors

/// The gate's protocol, one step at a time (the racing version is
/// `noMessageIsLostOrReorderedAndNoIdentityRunsTwiceAcrossRacingPassivations`).
@Suite struct EntityGateTests {
    /// `#expect` captures its operands by copy, which a non-copyable gate has not.
    private func check(_ condition: Bool, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation)
    {
        #expect(condition, comment, sourceLocation: sourceLocation)
    }

    @Test func aNewGateIsClosedAndItsClaimIsTaken() {
        let gate = EntityGate()
        check(!gate.isOpen)
        check(!gate.enter())
        check(!gate.leave(sent: false), "nobody may claim a gate that was never opened")
        gate.open()
        check(gate.isOpen)
    }

    @Test func closingAnEmptyGateClaimsItAtOnce() {
        let gate = EntityGate()
        gate.open()
        check(gate.close())
        check(!gate.enter())
        check(!gate.leave(sent: false), "the claim is taken once")
    }

    @Test func theLastSenderInsideAClosedGateClaimsIt() {
        let gate = EntityGate()
        gate.open()
        check(gate.enter())
        check(gate.enter())
        check(!gate.close(), "two senders are inside")
        check(!gate.enter(), "no new sender passes a closed gate")
        check(!gate.leave(sent: false), "the refused sender still leaves one inside")
        check(!gate.leave(sent: true))
        check(gate.leave(sent: true), "the last one out claims")
        gate.open()
        check(gate.enter())
        check(!gate.leave(sent: true))
    }

    @Test func completedSendsAreCountedForTheSweep() {
        let gate = EntityGate()
        gate.open()
        check(gate.activity().completed == 0)
        for _ in 0..<3 {
            check(gate.enter())
            check(gate.activity().busy)
            _ = gate.leave(sent: true)
        }
        check(gate.enter())
        _ = gate.leave(sent: false)
        check(gate.activity().completed == 3)
        check(!gate.activity().busy)
    }

    @Test func aSenderLeftInsideAcrossAReopeningClaimsTheNextClose() {
        let gate = EntityGate()
        gate.open()
        check(gate.close())
        check(!gate.enter(), "a late sender, refused")
        gate.open()
        check(!gate.close(), "the late sender has not left yet")
        check(gate.leave(sent: false), "and its leaving claims")
    }
}
