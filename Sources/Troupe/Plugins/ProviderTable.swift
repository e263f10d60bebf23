internal import TroupeLocks
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Synchronization

/// One registered actor (or pool): what it is, who registered it, and, once created, the
/// ``ActorRef`` or ``ActorPool`` itself.
///
/// Thread-safety: immutable apart from `slot`, which is guarded by its mutex; `make` runs on
/// the thread that moved the slot from `.empty` to `.creating`, outside the lock.
final class ProviderEntry: Sendable {
    enum Slot: Sendable {
        case empty
        /// Being created by this thread; other lookups wait, the same thread hits a cycle.
        case creating(pthread_t)
        case ready(any Sendable)
        /// The system shut down.
        case closed
    }

    let name: String
    let typeID: ObjectIdentifier
    let typeName: String
    let messageTypeID: ObjectIdentifier
    let messageTypeName: String
    let kind: ProviderKind
    let plugin: String?
    /// Spawns the actor or pool and returns its `ActorRef<Message>` or `ActorPool<Message>`.
    let make: @Sendable (ActorSystem) throws -> any Sendable
    let slot = Locked<Slot>(.empty)

    init(
        name: String, typeID: ObjectIdentifier, typeName: String, messageTypeID: ObjectIdentifier,
        messageTypeName: String, kind: ProviderKind, plugin: String?,
        make: @escaping @Sendable (ActorSystem) throws -> any Sendable
    ) {
        self.name = name
        self.typeID = typeID
        self.typeName = typeName
        self.messageTypeID = messageTypeID
        self.messageTypeName = messageTypeName
        self.kind = kind
        self.plugin = plugin
        self.make = make
    }

    var summary: RegisteredActor {
        RegisteredActor(name: name, typeName: typeName, messageTypeName: messageTypeName, kind: kind, plugin: plugin)
    }
}

/// A system's registered providers and installed plugins.
///
/// Thread-safety: the tables are behind one mutex, taken per lookup (never per message);
/// creation happens outside it (see ``ProviderEntry``). Lookups that find an actor being
/// created by another thread wait on `creations` until it is ready.
final class ProviderTable: Sendable {
    private struct State {
        var byName: [String: ProviderEntry] = [:]
        var namesByType: [ObjectIdentifier: [String]] = [:]
        var plugins: [String: PluginDescriptor] = [:]
        /// Real path of each loaded library → plugin name.
        var libraries: [String: String] = [:]
        var closed = false
    }

    private let state = Locked(State())
    private let creations = EventCount()

    init() {}

    // MARK: Registration

    /// Adds everything `registrar` collected, or nothing when a name or plugin is taken; then
    /// installs the hooks and spawns the `instance` providers.
    func commit(_ registrar: ActorRegistrar, into system: ActorSystem) throws(RegistryError) {
        let failure: RegistryError? = state.withLock { state in
            if state.closed { return .systemShutDown }
            for name in registrar.plugins.keys where state.plugins[name] != nil {
                return .pluginAlreadyInstalled(name)
            }
            for entry in registrar.providers {
                if let existing = state.byName[entry.name] {
                    return .duplicateName(entry.name, existingType: existing.typeName, plugin: existing.plugin)
                }
            }
            for entry in registrar.providers {
                state.byName[entry.name] = entry
                state.namesByType[entry.typeID, default: []].append(entry.name)
            }
            state.plugins.merge(registrar.plugins) { $1 }
            state.libraries.merge(registrar.libraries) { $1 }
            return nil
        }
        if let failure { throw failure }
        // Hooks first, so that they see the instances start.
        registrar.hooks.install(into: system.hooks)
        for entry in registrar.providers where entry.kind == .instance {
            _ = try create(entry, in: system)
        }
    }

    /// The plugin already loaded from the library at `realPath`, if any.
    func pluginLoaded(fromLibrary realPath: String) -> String? {
        state.withLock { $0.libraries[realPath] }
    }

    func isInstalled(plugin name: String) -> Bool {
        state.withLock { $0.plugins[name] != nil }
    }

    var plugins: [PluginDescriptor] {
        state.withLock { Array($0.plugins.values) }.sorted { $0.name < $1.name }
    }

    var registered: [RegisteredActor] {
        state.withLock { $0.byName.values.map(\.summary) }.sorted { $0.name < $1.name }
    }

    /// Forgets every created actor and pool (they are stopped by then) so that the system, which
    /// they reference, can be released. Later lookups fail with `.systemShutDown`.
    func close() {
        let entries = state.withLock { state in
            state.closed = true
            return Array(state.byName.values)
        }
        for entry in entries { entry.slot.withLock { $0 = .closed } }
        creations.notify(all: true)
    }

    // MARK: Lookup

    func entry(named name: String) throws(RegistryError) -> ProviderEntry {
        guard !name.isEmpty else { throw .emptyName }
        let result: Result<ProviderEntry, RegistryError> = state.withLock { state in
            if state.closed { return .failure(.systemShutDown) }
            if let entry = state.byName[name] { return .success(entry) }
            return .failure(.unknownName(name, registered: state.byName.keys.sorted()))
        }
        return try result.get()
    }

    func entry<Key>(ofType type: Key.Type) throws(RegistryError) -> ProviderEntry {
        let typeName = ActorRegistrar.typeName(type)
        let result: Result<ProviderEntry, RegistryError> = state.withLock { state in
            if state.closed { return .failure(.systemShutDown) }
            let names = state.namesByType[ObjectIdentifier(type)] ?? []
            if names.count > 1 { return .failure(.ambiguousType(typeName, names: names.sorted())) }
            if let name = names.first, let entry = state.byName[name] { return .success(entry) }
            let registered = Set(state.byName.values.map(\.typeName)).sorted()
            return .failure(.unknownType(typeName, registered: registered))
        }
        return try result.get()
    }

    /// The entry's ref (`pool == false`) or pool, accepting `Message`; creates it on first use.
    func resolve<Message: Sendable, Value>(
        _ entry: ProviderEntry, pool: Bool, accepting message: Message.Type, as value: Value.Type,
        in system: ActorSystem
    ) throws(RegistryError) -> Value {
        guard entry.kind.isPool == pool else {
            throw .wrongProvider(name: entry.name, registeredAs: entry.kind, requested: pool ? .pool : .singleton)
        }
        let requested = String(reflecting: message)
        guard entry.messageTypeID == ObjectIdentifier(message) else {
            throw .messageTypeMismatch(name: entry.name, accepts: entry.messageTypeName, requested: requested)
        }
        guard let typed = try create(entry, in: system) as? Value else {
            throw .messageTypeMismatch(name: entry.name, accepts: entry.messageTypeName, requested: requested)
        }
        return typed
    }

    private enum Step {
        case ready(any Sendable)
        case create
        case wait
        case cycle
        case closed
    }

    /// Returns the entry's actor or pool, creating it if nobody did: exactly one creation per
    /// entry, even when several threads look it up at once.
    private func create(_ entry: ProviderEntry, in system: ActorSystem) throws(RegistryError) -> any Sendable {
        let me = pthread_self()
        while true {
            let epoch = creations.prepareWait()
            let step: Step = entry.slot.withLock { slot in
                switch slot {
                case .ready(let value): return .ready(value)
                case .closed: return .closed
                case .creating(let creator): return pthread_equal(creator, me) != 0 ? .cycle : .wait
                case .empty:
                    slot = .creating(me)
                    return .create
                }
            }
            switch step {
            case .wait:
                creations.wait(epoch: epoch)
                continue
            case .ready(let value):
                creations.cancelWait()
                return value
            case .closed:
                creations.cancelWait()
                throw .systemShutDown
            case .cycle:
                creations.cancelWait()
                throw .creationCycle(name: entry.name)
            case .create:
                creations.cancelWait()
            }
            do {
                let value = try entry.make(system)
                entry.slot.withLock { slot in
                    if case .creating = slot { slot = .ready(value) }
                }
                creations.notify(all: true)
                return value
            } catch {
                entry.slot.withLock { slot in
                    if case .creating = slot { slot = .empty }
                }
                creations.notify(all: true)
                if let cycle = error as? RegistryError, case .creationCycle = cycle { throw cycle }
                throw .creationFailed(name: entry.name, error: error)
            }
        }
    }
}

// MARK: Looking actors up
