/// What the directory knows of every slot whatever its region's `Message` type: its key. The
/// base class of ``EntitySlot``, so that the directory's table is not generic.
@usableFromInline
class KeyedSlot: @unchecked Sendable {  // the key is immutable; a subclass says what guards the rest
    let key: String

    init(key: String) { self.key = key }
}
