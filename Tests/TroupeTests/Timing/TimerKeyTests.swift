import Testing

@testable import Troupe

/// `TimerKey`: an actor's timers are found by the value of their key, whatever its static
/// type. Integers of every width are one key space; `Int` and `String` are stored as themselves;
/// any other key is compared as `AnyHashable`.
@Suite struct TimerKeyTests {
    @Test func integersOfEveryWidthWithEqualValuesAreOneKey() {
        let keys = [
            TimerKey(7), TimerKey(Int8(7)), TimerKey(Int16(7)), TimerKey(Int32(7)), TimerKey(Int64(7)),
            TimerKey(UInt(7)), TimerKey(UInt8(7)), TimerKey(UInt16(7)), TimerKey(UInt32(7)), TimerKey(UInt64(7)),
        ]
        for key in keys {
            #expect(key == .int(7))
            #expect(key.hashValue == TimerKey.int(7).hashValue)
        }
        #expect(Set(keys).count == 1)
        #expect(TimerKey(Int8(-3)) == TimerKey(-3))
        #expect(TimerKey(Int64.min) == .int(Int.min))
    }

    @Test func stringsAreStoredAsThemselvesAndDifferFromIntegers() {
        #expect(TimerKey("poll") == .string("poll"))
        #expect(TimerKey("poll").hashValue == TimerKey.string("poll").hashValue)
        #expect(TimerKey("7") != TimerKey(7))
        #expect(TimerKey("poll") != TimerKey("Poll"))
        #expect(Set([TimerKey("a"), TimerKey("b"), TimerKey("a"), TimerKey(1), TimerKey("1")]).count == 4)
    }

    @Test func anUnsignedValueBeyondIntIsAKeyOfItsOwn() {
        let big = TimerKey(UInt64.max)
        guard case .other = big else {
            Issue.record("UInt64.max has no Int value, yet became \(big)")
            return
        }
        #expect(big == TimerKey(UInt64.max))
        #expect(big == TimerKey(UInt.max), "AnyHashable compares integers by value")
        #expect(big.hashValue == TimerKey(UInt.max).hashValue)
        #expect(big != TimerKey(-1))
    }

    @Test func otherKeysMatchByValueAndHash() {
        let first = TimerKey(Poll.source("feed"))
        let again = TimerKey(Poll.source("feed"))
        guard case .other = first else {
            Issue.record("an enum key became \(first)")
            return
        }
        #expect(first == again, "two boxes of equal values are one key")
        #expect(first.hashValue == again.hashValue)
        #expect(first != TimerKey(Poll.source("other feed")))
        #expect(TimerKey(Poll.all) != TimerKey(Poll.source("feed")))
        #expect(Set([first, again, TimerKey(Poll.all), TimerKey(Poll.all)]).count == 2)
    }

    @Test func equalPayloadsOfDifferentTypesAreDifferentKeys() {
        #expect(TimerKey(Tag(name: "x")) != TimerKey(OtherTag(name: "x")))
        #expect(TimerKey(Tag(name: "x")) != TimerKey("x"))
        #expect(TimerKey(Tag(name: "x")) == TimerKey(Tag(name: "x")))
    }
}

private enum Poll: Hashable, Sendable {
    case all
    case source(String)
}

private struct Tag: Hashable, Sendable { let name: String }
private struct OtherTag: Hashable, Sendable { let name: String }
