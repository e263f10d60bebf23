internal import TroupeLocks
import Synchronization

/// Why a service could not be registered or resolved.
public enum ServiceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing is registered under `type`. `registered` lists what is, to spot a typo or a
    /// registration under a protocol instead of the concrete type (or the other way round).
    case notRegistered(type: String, registered: [String])
    /// Something is already registered under `type`.
    case alreadyRegistered(type: String)

    public var description: String {
        switch self {
        case .notRegistered(let type, let registered):
            let known = registered.isEmpty ? "none" : registered.joined(separator: ", ")
            return "no service registered as \(type) (registered: \(known)); register it with "
                + "`services.register(instance)` for its concrete type or `services.register(instance, as: (any Protocol).self)` "
                + "before the actors that need it resolve it"
        case .alreadyRegistered(let type):
            return "a service is already registered as \(type); register each type once, "
                + "or use `services.replace(instance, as: \(type).self)` to swap it on purpose"
        }
    }
}

/// Services that are not actors (stores, clients, clocks), shared by the actors of a system
/// and looked up by the type they were registered under: their concrete type or a protocol.
///
/// ```swift
/// let store = SessionStore()
/// let services = ServiceLocator()
/// try services.register(store)                                  // by concrete type
/// try services.register(store, as: (any SessionProvider).self)  // by protocol
/// let system = try ActorSystem.build(services: services) { builder in ... }
///
/// // In a handler:
/// let sessions = try context.service(SessionStore.self)
/// ```
///
/// Thread-safety: register, replace and resolve from any thread (one mutex; a lookup costs a
/// dictionary probe under it). Resolve once, for example in `started`, and keep the value
/// rather than resolving per message. Services are `Sendable` because every actor of the
/// system may use them concurrently.
public final class ServiceLocator: Sendable {
    private struct Entry {
        let service: any Sendable
        let typeName: String
    }

    private let entries = Locked<[ObjectIdentifier: Entry]>([:])

    public init() {}

    /// Registers `service` under its concrete (static) type.
    public func register<Service: Sendable>(_ service: Service) throws(ServiceError) {
        try register(service, as: Service.self)
    }

    /// Registers `service` under `type`, typically a protocol it conforms to:
    /// `try services.register(store, as: (any SessionProvider).self)`. The same instance may be
    /// registered under several types.
    public func register<Service: Sendable>(_ service: Service, as type: Service.Type) throws(ServiceError) {
        let key = ObjectIdentifier(type)
        let name = Self.name(of: type)
        let added = entries.withLock { entries in
            guard entries[key] == nil else { return false }
            entries[key] = Entry(service: service, typeName: name)
            return true
        }
        guard added else { throw .alreadyRegistered(type: name) }
    }

    /// Registers or replaces the service under `type`. Actors that already resolved the
    /// previous one keep it.
    public func replace<Service: Sendable>(_ service: Service, as type: Service.Type = Service.self) {
        let name = Self.name(of: type)
        entries.withLock { $0[ObjectIdentifier(type)] = Entry(service: service, typeName: name) }
    }

    /// The service registered under `type`.
    public func resolve<Service>(_ type: Service.Type = Service.self) throws(ServiceError) -> Service {
        let found = entries.withLock { $0[ObjectIdentifier(type)] }
        guard let found else { throw .notRegistered(type: Self.name(of: type), registered: registeredTypes) }
        // Stored under ObjectIdentifier(Service.self) by a register call typed with this very
        // Service, so the cast cannot fail.
        return found.service as! Service
    }

    /// The service registered under `type`, or `nil`.
    public func resolveIfRegistered<Service>(_ type: Service.Type = Service.self) -> Service? {
        entries.withLock { $0[ObjectIdentifier(type)] }?.service as? Service
    }

    /// Whether something is registered under `type`.
    public func contains<Service>(_ type: Service.Type) -> Bool {
        entries.withLock { $0[ObjectIdentifier(type)] != nil }
    }

    /// Removes the service registered under `type`; returns whether there was one.
    @discardableResult
    public func remove<Service>(_ type: Service.Type) -> Bool {
        entries.withLock { $0.removeValue(forKey: ObjectIdentifier(type)) != nil }
    }

    /// The names of the registered types, sorted.
    public var registeredTypes: [String] {
        entries.withLock { $0.values.map(\.typeName) }.sorted()
    }

    private static func name<Service>(of type: Service.Type) -> String { String(reflecting: type) }
}

extension ActorContext {
    /// The system's services (``ActorSystem/Configuration/services``).
    public var services: ServiceLocator { cell.system.configuration.services }

    /// Resolves a service registered under `type` (a concrete type or `(any Protocol).self`).
    /// Fails with ``ServiceError/notRegistered(type:registered:)`` naming the type.
    public func service<Service>(_ type: Service.Type = Service.self) throws(ServiceError) -> Service {
        try services.resolve(type)
    }
}

extension ActorSystem {
    /// The services actors resolve from their context; the same object as
    /// `configuration.services`.
    public var services: ServiceLocator { configuration.services }
}
