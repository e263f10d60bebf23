import Testing
import TroupeTesting

@testable import TroupeVirtualActors

/// The directory's table of slots by key (open addressing, linear probing, removal by backward
/// shift), checked against a dictionary as the model.
@Suite struct UnsafeSlotTableTests {
    @Test func findsEachSlotByItsKeySmallOrLarge() {
        let table = UnsafeSlotTable()
        // Keys up to 15 UTF-8 bytes are stored inline in a String; longer ones on the heap.
        let keys = [
            "a", "user-42", String(repeating: "k", count: 15), String(repeating: "long-key-", count: 20), "é🙂", "",
        ]
        let slots = keys.map { EntitySlot<Int>(key: $0) }
        for slot in slots { table.insert(slot) }
        #expect(table.count == keys.count)
        for (key, slot) in zip(keys, slots) {
            #expect(table[key] === slot, "the slot for \(key)")
            #expect(table[key + "x"] == nil)
        }
        // Equal strings with another representation: NFC "é" against "e" + combining acute.
        #expect(table["e\u{301}🙂"] === slots[4])
        #expect(table["absent"] == nil)
        var seen: [String] = []
        table.forEach { seen.append($0.key) }
        #expect(seen.sorted() == keys.sorted())
    }

    @Test func removesASlotOnlyWhileItIsTheOneForItsKey() {
        let table = UnsafeSlotTable()
        let first = EntitySlot<Int>(key: "cart")
        table.insert(first)
        table.remove(first)
        #expect(table["cart"] == nil)
        #expect(table.count == 0)

        // A retired slot's late removal must not take out the slot that replaced it.
        let replacement = EntitySlot<Int>(key: "cart")
        table.insert(replacement)
        table.remove(first)
        #expect(table["cart"] === replacement)
        #expect(table.count == 1)
    }

    /// Seeded random inserts and removals across several doublings, every key looked up after
    /// each round: a backward shift that moved a member before its home bucket would lose it.
    @Test func agreesWithADictionaryThroughGrowthAndRemovals() {
        var random = SeededGenerator(seed: 32)
        let table = UnsafeSlotTable()
        var model: [String: EntitySlot<Int>] = [:]
        for round in 0..<40 {
            for _ in 0..<500 {
                let key = "e\(Int.random(in: 0..<3_000, using: &random))"
                if let slot = model[key], Int.random(in: 0..<3, using: &random) == 0 {
                    table.remove(slot)
                    model[key] = nil
                } else if model[key] == nil {
                    let slot = EntitySlot<Int>(key: key)
                    table.insert(slot)
                    model[key] = slot
                }
            }
            #expect(table.count == model.count, "round \(round)")
            for index in 0..<3_000 {
                let key = "e\(index)"
                #expect(table[key] === model[key], "round \(round): \(key)")
            }
        }
        var walked = 0
        table.forEach { slot in
            walked += 1
            #expect(model[slot.key] === slot)
        }
        #expect(walked == model.count)
        for slot in model.values { table.remove(slot) }
        #expect(table.count == 0)
    }

    @Test func releasesItsSlotsWhenRemovedAndWhenFreed() {
        weak var removed: EntitySlot<Int>?
        weak var kept: EntitySlot<Int>?
        var table: UnsafeSlotTable? = UnsafeSlotTable()
        do {
            let first = EntitySlot<Int>(key: "removed")
            let second = EntitySlot<Int>(key: "kept")
            (removed, kept) = (first, second)
            table?.insert(first)
            table?.insert(second)
            table?.remove(first)
        }
        #expect(removed == nil, "a removed slot is released")
        #expect(kept != nil, "the table keeps its members alive")
        table = nil
        #expect(kept == nil, "freeing the table releases its members")
    }
}
