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
    public init(
        magic: UInt64 = PluginEntryHeader.expectedMagic, apiVersion: UInt32,
        name: UnsafeMutablePointer<CChar>?, version: UnsafeMutablePointer<CChar>?,
        plugin: UnsafeMutableRawPointer?
    ) {
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
        // Safety: the header, its two strings and the box's +1 go to the host, which frees the header and
        // strings with the same Swift allocator and takes the retain back (`PluginLibraryLoader.open`).
        let header = UnsafeMutablePointer<PluginEntryHeader>.allocate(capacity: 1)
        header.initialize(
            to: PluginEntryHeader(
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
        // Safety: `count` bytes, the whole NUL-terminated UTF-8 copy; `utf8CString` is never empty (it
        // holds the NUL), so its base address exists. The host frees the buffer.
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
