/// Errors of the default steps of a ``FetchFlow``.
public enum FetchFlowError: Error, Sendable, Hashable {
    /// The flow has no persistence step, so loading always falls back to the source.
    case noPersistence
}
