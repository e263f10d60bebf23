import CTroupe
import Testing
@testable import Troupe

#if DEBUG
    /// The debug contract checks fire when a contract is broken, and stay quiet when it holds.
    /// (Debug builds only: release builds compile the checks out.)
    @Suite struct ContractCheckTests {
        /// A fresh mailbox in storage of its own, and what to free afterwards.
        static func makeMailbox() -> (OpaquePointer, UnsafeMutableRawPointer) {
            let storage = UnsafeMutableRawPointer.allocate(
                byteCount: Int(CTroupe_mailbox_storage_size), alignment: 16)
            return (CTroupe_mailbox_init(storage, nil, false, false)!, storage)
        }

        @Test func theRightsHolderPopsAndFinishesWithoutATrip() {
            let (mailbox, storage) = Self.makeMailbox()
            defer { storage.deallocate() }
            #expect(CTroupe_mailbox_try_acquire(mailbox))
            var out: [UnsafeMutablePointer<CTroupe_envelope>?] = [nil]
            #expect(CTroupe_mailbox_pop_batch(mailbox, &out, 1) == 0)
            #expect(!CTroupe_mailbox_finish_turn(mailbox), "empty: the right is released")
            #expect(!CTroupe_mailbox_is_scheduled(mailbox))
        }

        @Test func poppingWithoutTheSchedulingRightStops() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let (mailbox, _) = ContractCheckTests.makeMailbox()
                var out: [UnsafeMutablePointer<CTroupe_envelope>?] = [nil]
                _ = CTroupe_mailbox_pop_batch(mailbox, &out, 1)
            }
            let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(text.contains("CTroupe contract violated"))
            #expect(text.contains("only by the holder of its scheduling right"))
        }

        @Test func finishingATurnWithoutTheSchedulingRightStops() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let (mailbox, _) = ContractCheckTests.makeMailbox()
                _ = CTroupe_mailbox_finish_turn(mailbox)
            }
            let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(text.contains("only by the holder of its scheduling right"))
        }

        @Test func queueingAMailboxWithoutTheSchedulingRightStops() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let (mailbox, _) = ContractCheckTests.makeMailbox()
                let queue = CTroupe_runqueue_create()!
                CTroupe_runqueue_push(queue, mailbox)
            }
            let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(text.contains("only the holder of a mailbox's scheduling right puts it on a run queue"))
        }

        @Test func leavingAnEventCountWithoutPreparingStops() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let eventCount = CTroupe_eventcount_create()!
                CTroupe_eventcount_cancel_wait(eventCount)
            }
            let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(text.contains("cancel_wait and wait only after prepare_wait"))
        }

        @Test func aLifecycleMovesOnlyAlongItsTransitions() async {
            let lifecycle = AtomicLifecycle<SchedulerState>(.created)
            let left = lifecycle.advance(to: .running)
            #expect(left == .created)
            let reached = (lifecycle.hasReached(.running), lifecycle.hasReached(.stopping))
            #expect(reached == (true, false))
            let moved = lifecycle.advance(from: .stopping, to: .terminated)
            #expect(!moved, "not in that state: no move")
            let state = lifecycle.load()
            #expect(state == .running)
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let skipping = AtomicLifecycle<SchedulerState>(.running)
                skipping.advance(to: .terminated)
            }
            let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(text.contains("SchedulerState: running -> terminated is not a transition"))
        }
    }
#endif
