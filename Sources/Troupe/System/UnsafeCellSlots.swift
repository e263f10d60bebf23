#if canImport(Glibc)
    import Glibc
#endif

/// The storage behind ``LiveActors``: a buffer of unretained cell references (nil for an empty
/// place), grown by doubling and shrunk when mostly empty, with `realloc` (which moves a large
/// buffer's pages instead of copying them). Raw so that a spawn's and a stop's place costs a
/// store, not an array's uniqueness, bounds and capacity checks (the `Spawn` rows of the
/// instruction guard count them); every index is checked in debug builds.
///
/// Only the places below the `used` count its owner passes hold values; the rest is never read.
///
/// Thread-safety: none; only ``LiveActors`` touches it, under the system's `liveActors` lock.
final class UnsafeCellSlots {
    private(set) var base: UnsafeMutablePointer<Unmanaged<AnyCell>?>
    private(set) var capacity: Int
    private static let initialCapacity = 1024

    init() {
        capacity = Self.initialCapacity
        base = Self.reallocate(nil, capacity: capacity)
    }

    deinit { free(base) }  // the elements are trivial (unretained references)

    subscript(place: Int) -> Unmanaged<AnyCell>? {
        get {
            assert(place >= 0 && place < capacity, "UnsafeCellSlots: place \(place) of \(capacity)")
            // Safety: `place` lies in the buffer (checked in debug) and below the owner's `used`
            // count, so it was written; the element is trivial.
            return base[place]
        }
        set {
            assert(place >= 0 && place < capacity, "UnsafeCellSlots: place \(place) of \(capacity)")
            // Safety: `place` lies in the buffer; the element is trivial, so initializing over a
            // value (or over memory never written) releases nothing.
            (base + place).initialize(to: newValue)
        }
    }

    /// Doubles the buffer (at least).
    func grow() { resize(to: capacity * 2) }

    /// Halves the buffer while `used` is less than a quarter of it (a million actors that
    /// stopped give their 8 MB back), down to the initial 1,024 places.
    func shrink(keeping used: Int) {
        var target = capacity
        while target > Self.initialCapacity && used < target / 4 { target /= 2 }
        if target < capacity { resize(to: target) }
    }

    private func resize(to newCapacity: Int) {
        base = Self.reallocate(base, capacity: newCapacity)
        capacity = newCapacity
    }

    private static func reallocate(
        _ buffer: UnsafeMutablePointer<Unmanaged<AnyCell>?>?, capacity: Int
    ) -> UnsafeMutablePointer<Unmanaged<AnyCell>?> {
        let bytes = capacity * MemoryLayout<Unmanaged<AnyCell>?>.stride
        // Safety: `buffer` is nil or came from this function; `realloc` keeps the places below
        // the smaller of the two sizes, and the elements are trivial, so moving their bytes moves them.
        guard let raw = realloc(buffer.map(UnsafeMutableRawPointer.init), bytes) else {
            fatalError("UnsafeCellSlots: out of memory for \(capacity) live actors' places")
        }
        return raw.bindMemory(to: Unmanaged<AnyCell>?.self, capacity: capacity)
    }
}
