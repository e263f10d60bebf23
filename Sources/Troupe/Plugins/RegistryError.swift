/// What went wrong with a registration or a lookup in the plugin registry. Every message says
/// what to do about it.
public enum RegistryError: Error, Sendable, CustomStringConvertible {
    /// No actor is registered under this name.
    case unknownName(String, registered: [String])
    /// No actor of this definition type is registered.
    case unknownType(String, registered: [String])
    /// The definition type is registered under several names; a lookup by type cannot choose.
    case ambiguousType(String, names: [String])
    /// The name is taken (by `existingType`, registered by `plugin` if a plugin did).
    case duplicateName(String, existingType: String, plugin: String?)
    /// A registration or lookup gave an empty name.
    case emptyName
    /// The actor accepts another message type than the lookup asked for.
    case messageTypeMismatch(name: String, accepts: String, requested: String)
    /// The lookup asked for a single actor where a pool is registered, or the other way round.
    case wrongProvider(name: String, registeredAs: ProviderKind, requested: ProviderKind)
    /// A pool registration was invalid.
    case invalidPool(name: String, PoolError)
    /// A factory or singleton needs itself, directly or through other providers.
    case creationCycle(name: String)
    /// A factory threw while creating the actor (the next lookup tries again), or a
    /// ``HandlerActor``'s `setup` is misused (``HandlerSetupError``, at registration or lookup).
    case creationFailed(name: String, error: any Error)
    /// A plugin with this name is already installed in this system (or builder).
    case pluginAlreadyInstalled(String)
    /// A plugin declared a runtime API version this Troupe does not provide.
    case pluginAPIMismatch(plugin: String, pluginAPI: UInt32, runtimeAPI: UInt32)
    /// The plugin's `register(into:)` threw.
    case pluginRegistrationFailed(plugin: String, error: any Error)
    /// ``SystemBuilder/build()`` was called a second time.
    case builderAlreadyBuilt
    /// The system has shut down; its registered actors are gone.
    case systemShutDown

    public var description: String {
        switch self {
        case .unknownName(let name, let registered):
            return "no actor is registered as '\(name)' (registered: \(Self.list(registered))); register it with "
                + "`builder.singleton`, `.instance`, `.factory` or `.pool` (name: \"\(name)\"), or load the plugin that provides it"
        case .unknownType(let type, let registered):
            return "no actor of type \(type) is registered (registered: \(Self.list(registered))); register it with "
                + "`builder.singleton(\(type).init)` (or `.instance`, `.factory`, `.pool`) before looking it up"
        case .ambiguousType(let type, let names):
            return "\(type) is registered under several names (\(Self.list(names))); look it up by name with "
                + "`system.actor(named:)` or `system.pool(named:)`"
        case .duplicateName(let name, let existingType, let plugin):
            let owner = plugin.map { " by plugin '\($0)'" } ?? ""
            return "the name '\(name)' is already registered for \(existingType)\(owner); give this registration "
                + "another name with `name:`"
        case .emptyName:
            return
                "an actor registration or lookup used an empty name; pass a non-empty `name:` or omit it to use the type name"
        case .messageTypeMismatch(let name, let accepts, let requested):
            return "'\(name)' accepts \(accepts), not \(requested); look it up as `accepting: \(accepts).self` "
                + "(for per-type handler actors: AnyMessage)"
        case .wrongProvider(let name, let registeredAs, let requested):
            if registeredAs.isPool {
                return "'\(name)' is registered as a pool, not a single actor; get it with `system.pool(...)`"
            }
            return
                "'\(name)' is a single actor (registered as \(registeredAs)), not a \(requested); get it with `system.actor(...)`"
        case .invalidPool(let name, let error):
            return "pool '\(name)': \(error)"
        case .creationCycle(let name):
            return "creating '\(name)' needs '\(name)' again: its factories form a cycle; break it by resolving "
                + "one of the refs lazily, inside the actor (for example in `started`, via `context.system.actor(...)`)"
        case .creationFailed(let name, let error):
            if error is HandlerSetupError { return "creating '\(name)' failed: \(error)" }
            return "the factory of '\(name)' threw: \(error); fix what it needs (the next lookup tries again)"
        case .pluginAlreadyInstalled(let name):
            return "plugin '\(name)' is already installed in this system; install or load each plugin once"
        case .pluginAPIMismatch(let plugin, let pluginAPI, let runtimeAPI):
            return
                "plugin '\(plugin)' was built for Troupe plugin API \(pluginAPI), this runtime provides \(runtimeAPI); "
                + "rebuild the plugin against this version of Troupe"
        case .pluginRegistrationFailed(let plugin, let error):
            return "plugin '\(plugin)' failed to register its actors: \(error)"
        case .builderAlreadyBuilt:
            return "this SystemBuilder has already built a system; create a new builder for another system"
        case .systemShutDown:
            return "the actor system has shut down; registered actors cannot be looked up or created any more"
        }
    }

    private static func list(_ names: [String]) -> String {
        names.isEmpty ? "none" : names.joined(separator: ", ")
    }
}
