/// What an observer of a ``FetchFlow`` sees: each step starting and how it ended.
public enum FetchEvent<Key: Sendable, Value: Sendable>: Sendable {
    case started(FetchStep, key: Key)
    case succeeded(FetchStep, key: Key, value: Value)
    case failed(FetchStep, key: Key, error: any Error)
}
