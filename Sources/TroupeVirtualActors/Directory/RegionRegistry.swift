import Troupe
internal import TroupeLocks

/// Which kinds have a region in which system, so that a second region of a kind (which would
/// activate the same identities again) fails at once. Kept in the system's service locator, so
/// it lives as long as the system's configuration; keyed by system, since configurations (and
/// their locator) may be shared by several systems.
final class RegionRegistry: Sendable {
    struct Key: Hashable, Sendable {
        let system: ObjectIdentifier
        let kind: String
        init(system: ActorSystem, kind: String) {
            self.system = ObjectIdentifier(system)
            self.kind = kind
        }
    }

    private let kinds = Locked<Set<Key>>([])

    static func claim(kind: String, in system: ActorSystem) throws(EntityRegionError) {
        let services = system.configuration.services
        let registry: RegionRegistry
        if let existing = services.resolveIfRegistered(RegionRegistry.self) {
            registry = existing
        } else {
            let made = RegionRegistry()
            do { try services.register(made) } catch {}  // registered meanwhile by another region
            registry = services.resolveIfRegistered(RegionRegistry.self) ?? made
        }
        if !registry.kinds.withLock({ $0.insert(Key(system: system, kind: kind)).inserted }) {
            throw .duplicateKind(kind)
        }
    }
}
