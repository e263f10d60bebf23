/// A step of a ``FetchFlow``, as seen by its observers.
public enum FetchStep: String, Sendable, Hashable {
    case loadFromPersistence, source, saveToPersistence
}
