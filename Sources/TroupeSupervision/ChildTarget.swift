import Troupe

/// What a child id stands for.
enum ChildTarget: Sendable {
    case actor(any SupervisedRef)
    case pool(SupervisedPool)
    case supervisor(Supervisor)

    var typeName: String {
        switch self {
        case .actor(let ref): String(describing: type(of: ref))
        case .pool(let pool): pool.typeName
        case .supervisor: "Supervisor"
        }
    }
}
