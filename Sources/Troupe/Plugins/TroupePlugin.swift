/// The plugin interface's version.
public enum PluginAPI {
    /// Raised whenever Troupe changes in a way that breaks plugins built against an earlier
    /// version (public API, type layout, the entry-point header). Emitted into the client, so a
    /// plugin carries the value it was compiled against, not the host's.
    @_alwaysEmitIntoClient
    public static var version: UInt32 { 1 }

    /// The C symbol a loadable plugin exports: `@_cdecl("troupe_plugin_entry")`, see
    /// ``PluginExport``.
    public static let entryPointSymbol = "troupe_plugin_entry"
}

/// Who a plugin is: its name (unique within a system), its own version, and the plugin API
/// version it was built against.
public struct PluginDescriptor: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    public let version: String
    public let apiVersion: UInt32

    public init(name: String, version: String, apiVersion: UInt32 = PluginAPI.version) {
        self.name = name
        self.version = version
        self.apiVersion = apiVersion
    }

    public var description: String { "\(name) \(version) (plugin API \(apiVersion))" }
}

/// A bundle of actor definitions (and services, and runtime hooks) that registers itself into
/// a system: linked into the program and installed with ``SystemBuilder/plugin(_:)`` or
/// ``ActorSystem/install(_:)``, or built as a shared library and loaded with
/// ``ActorSystem/loadPlugin(at:)``. The optional modules (promises, pub/sub, supervision) plug
/// in the same way.
///
/// ```swift
/// struct AuthPlugin: TroupePlugin {
///     var descriptor: PluginDescriptor { PluginDescriptor(name: "auth", version: "1.2.0") }
///     func register(into registrar: ActorRegistrar) throws {
///         try registrar.singleton(AuthActor.init)
///         registrar.hooks.onActorFailed { failure, _ in metrics.count(failure) }
///     }
/// }
/// ```
public protocol TroupePlugin {
    /// Name, version and plugin API version.
    var descriptor: PluginDescriptor { get }

    /// Registers the plugin's actors, services and hooks. Called once per system, on the
    /// thread that installs the plugin. Nothing registered takes effect unless every
    /// registration succeeds.
    func register(into registrar: ActorRegistrar) throws
}

// MARK: Loadable plugins: the entry point
