import Troupe

/// An API actor with per-type handlers: answers a path with its member number.
public struct APIActor: HandlerActor {
    public var member = -1

    public init(member: Int = -1) { self.member = member }

    public mutating func setup(_ on: inout MessageHandlers<APIActor>) {
        on.result(String.self) { api, path, _ in "GET \(path) via api-\(api.member)" }
    }
}
