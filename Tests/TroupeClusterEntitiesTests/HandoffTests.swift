import Testing

@testable import TroupeClusterEntities

/// The handoff's states, step by step (no nodes).
@Suite struct HandoffTests {
    static func item(_ key: String) -> Handoff.Held { .message(key: key, 0) }

    static func keys(_ step: Handoff.FlushStep) -> [String]? {
        guard case .route(let items) = step else { return nil }
        return items.map { item in
            switch item {
            case .message(let key, _): key
            case .envelope(let envelope, _): envelope.key
            }
        }
    }

    @Test func theFirstViewWithNoOtherMembersIsConfirmedAtOnce() {
        var handoff = Handoff()
        #expect(handoff.isSettled)
        let change = handoff.viewChanged(fingerprint: 7, confirmers: [:])
        #expect(change?.confirmed == true)
        guard case .done(let waiters) = handoff.flushStep(generation: change!.generation) else {
            return #expect(Bool(false), "a flush with nothing held is done")
        }
        #expect(waiters.isEmpty)
        #expect(handoff.isSettled)
        let held1 = handoff.hold(Self.item("a"))
        #expect(!held1, "nothing is held once settled")
    }

    @Test func itemsWaitForEveryConfirmationAndGoOnInOrder() {
        var handoff = Handoff()
        let change = handoff.viewChanged(fingerprint: 7, confirmers: [1: 1, 2: 1])!
        #expect(!change.confirmed)
        #expect(!handoff.isSettled)
        let held2 = handoff.hold(Self.item("a"))
        #expect(held2)
        let held3 = handoff.hold(Self.item("b"))
        #expect(held3)
        let completes4 = handoff.confirm(1, incarnation: 1, fingerprint: 6)
        #expect(!completes4, "a confirmation of other owners does not count")
        let completes5 = handoff.confirm(1, incarnation: 1, fingerprint: 7)
        #expect(!completes5)
        let completes6 = handoff.confirm(1, incarnation: 1, fingerprint: 7)
        #expect(!completes6, "counted once")
        #expect(handoff.waitingFor == [2])
        let completes7 = handoff.confirm(2, incarnation: 1, fingerprint: 7)
        #expect(completes7, "the last confirmation starts the flush")
        let held8 = handoff.hold(Self.item("c"))
        #expect(held8, "while flushing, new items queue behind")
        let step9 = handoff.flushStep(generation: change.generation)
        #expect(Self.keys(step9) == ["a", "b", "c"])
        let held10 = handoff.hold(Self.item("d"))
        #expect(held10)
        let step11 = handoff.flushStep(generation: change.generation)
        #expect(Self.keys(step11) == ["d"])
        guard case .done = handoff.flushStep(generation: change.generation) else {
            return #expect(Bool(false), "done once nothing is left")
        }
        #expect(handoff.isSettled)
        #expect(handoff.heldCount == 4)
    }

    @Test func aConfirmationThatCameFirstCountsWhenTheViewArrives() {
        var handoff = Handoff()
        _ = handoff.viewChanged(fingerprint: 1, confirmers: [:])
        let completes12 = handoff.confirm(5, incarnation: 1, fingerprint: 9)
        #expect(!completes12)
        let change = handoff.viewChanged(fingerprint: 9, confirmers: [5: 1])!
        #expect(change.confirmed)
    }

    /// A listing can show the members one by one, or drop one for a moment: a member's marker
    /// and confirmation that came meanwhile are not sent again (the member's own view did not
    /// change), so they must still count when it is back.
    @Test func aMembersSignalsCountAfterAViewThatLackedIt() {
        var handoff = Handoff()
        _ = handoff.viewChanged(fingerprint: 1, confirmers: [1: 1, 2: 1])
        handoff.marker(2, incarnation: 1, fingerprint: 3)
        let completes19 = handoff.confirm(2, incarnation: 1, fingerprint: 3)
        #expect(!completes19)
        _ = handoff.viewChanged(fingerprint: 2, confirmers: [1: 1])
        let change = handoff.viewChanged(fingerprint: 3, confirmers: [1: 1, 2: 1])!
        #expect(handoff.markersMissing == [1])
        #expect(handoff.waitingFor == [1])
        handoff.marker(1, incarnation: 1, fingerprint: 3)
        #expect(handoff.markersMissing.isEmpty)
        let completes20 = handoff.confirm(1, incarnation: 1, fingerprint: 3)
        #expect(completes20)
        _ = handoff.flushStep(generation: change.generation)
        #expect(handoff.isSettled)
    }

    /// A region made again on a member's node has a higher incarnation: what the older one
    /// confirmed says nothing of the new one's activations.
    @Test func aNewerRegionOnAMembersNodeMakesItsOldSignalsStale() {
        var handoff = Handoff()
        _ = handoff.viewChanged(fingerprint: 1, confirmers: [:])
        handoff.marker(2, incarnation: 4, fingerprint: 3)
        let completes21 = handoff.confirm(2, incarnation: 4, fingerprint: 3)
        #expect(!completes21)
        _ = handoff.viewChanged(fingerprint: 3, confirmers: [2: 5])
        #expect(handoff.waitingFor == [2], "the older region's confirmation does not count")
        #expect(handoff.markersMissing == [2])
        let completes22 = handoff.confirm(2, incarnation: 4, fingerprint: 3)
        #expect(!completes22, "nor does one that comes late")
        handoff.marker(2, incarnation: 5, fingerprint: 3)
        #expect(handoff.markersMissing.isEmpty)
        let completes23 = handoff.confirm(2, incarnation: 5, fingerprint: 3)
        #expect(completes23)
    }

    @Test func theSameOwnersAreNoNewView() {
        var handoff = Handoff()
        let first = handoff.viewChanged(fingerprint: 3, confirmers: [1: 1, 2: 1])!
        let unchanged13 = handoff.viewChanged(fingerprint: 3, confirmers: [1: 1]) == nil
        #expect(unchanged13, "a leaver left the listing")
        #expect(handoff.waitingFor == [1], "it no longer needs to confirm")
        let completes14 = handoff.confirm(1, incarnation: 1, fingerprint: 3)
        #expect(completes14)
        _ = handoff.flushStep(generation: first.generation)
        #expect(handoff.isSettled)
    }

    @Test func aNewerViewSupersedesAFlushAndItsTimeout() {
        var handoff = Handoff()
        let first = handoff.viewChanged(fingerprint: 3, confirmers: [1: 1])!
        let held15 = handoff.hold(Self.item("a"))
        #expect(held15)
        let second = handoff.viewChanged(fingerprint: 4, confirmers: [1: 1])!
        let expired16 = handoff.timedOut(generation: first.generation)
        #expect(!expired16, "the old view's timeout does nothing")
        guard case .superseded = handoff.flushStep(generation: first.generation) else {
            return #expect(Bool(false), "the old view's flush stops")
        }
        let expired17 = handoff.timedOut(generation: second.generation)
        #expect(expired17, "the current view's timeout confirms it")
        #expect(handoff.timeouts == 1)
        let step18 = handoff.flushStep(generation: second.generation)
        #expect(Self.keys(step18) == ["a"], "what was held goes on")
    }
}
