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

/// The plain-data header a loadable plugin's entry point returns. The host reads it before it
/// trusts any Swift type of the library, so its first five fields (magic, API version, size,
/// name, version) keep their layout in every Troupe version; fields after them may change with
/// the API version.
@frozen
public struct PluginEntryHeader {
    /// "TROUPEPL" in ASCII.
    @_alwaysEmitIntoClient
    public static var expectedMagic: UInt64 { 0x5452_4F55_5045_504C }

    public var magic: UInt64
    public var apiVersion: UInt32
    public var headerSize: UInt32
    /// NUL-terminated, allocated with `UnsafeMutablePointer.allocate`; the host frees it.
    public var name: UnsafeMutablePointer<CChar>?
    /// NUL-terminated, allocated with `UnsafeMutablePointer.allocate`; the host frees it.
    public var version: UnsafeMutablePointer<CChar>?
    /// A +1 retained object wrapping the ``TroupePlugin`` (API version 1).
    public var plugin: UnsafeMutableRawPointer?

    @_alwaysEmitIntoClient
    public init(magic: UInt64 = PluginEntryHeader.expectedMagic, apiVersion: UInt32,
                name: UnsafeMutablePointer<CChar>?, version: UnsafeMutablePointer<CChar>?,
                plugin: UnsafeMutableRawPointer?) {
        self.magic = magic
        self.apiVersion = apiVersion
        self.headerSize = UInt32(MemoryLayout<PluginEntryHeader>.size)
        self.name = name
        self.version = version
        self.plugin = plugin
    }
}

/// Builds what a loadable plugin's entry point returns. A plugin library exports exactly one
/// entry point:
///
/// ```swift
/// @_cdecl("troupe_plugin_entry")
/// public func troupePluginEntry() -> UnsafeMutableRawPointer {
///     PluginExport.entryPoint(for: GreeterPlugin())
/// }
/// ```
///
/// Host and plugin must share one copy of the Troupe module: link the plugin against the
/// `TroupeDynamic` product (a shared `libTroupeDynamic.so`), and let the host either link the
/// same product or export its own Troupe symbols (`-Xlinker --export-dynamic`). A plugin that
/// carries its own copy is refused with ``PluginLoadError/separateRuntimeCopy(plugin:path:)``.
public enum PluginExport {
    /// The entry point's result for `plugin`: a ``PluginEntryHeader`` recording the plugin API
    /// version this plugin is compiled against. Emitted into the plugin.
    @_alwaysEmitIntoClient
    public static func entryPoint(for plugin: some TroupePlugin) -> UnsafeMutableRawPointer {
        let descriptor = plugin.descriptor
        let header = UnsafeMutablePointer<PluginEntryHeader>.allocate(capacity: 1)
        header.initialize(to: PluginEntryHeader(
            apiVersion: PluginAPI.version,
            name: cString(descriptor.name),
            version: cString(descriptor.version),
            plugin: Unmanaged.passRetained(PluginExportBox(plugin)).toOpaque()
        ))
        return UnsafeMutableRawPointer(header)
    }

    /// A NUL-terminated copy of `string`, to be freed by the host.
    @_alwaysEmitIntoClient
    public static func cString(_ string: String) -> UnsafeMutablePointer<CChar> {
        let bytes = string.utf8CString
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
        bytes.withUnsafeBufferPointer { buffer.initialize(from: $0.baseAddress!, count: $0.count) }
        return buffer
    }
}

/// Carries the plugin from the library to the host. The host's cast to this class is the type
/// identity check: it fails when the library brought its own copy of Troupe.
@usableFromInline
final class PluginExportBox {
    let plugin: any TroupePlugin

    @usableFromInline
    init(_ plugin: any TroupePlugin) { self.plugin = plugin }
}
