#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Why a plugin library could not be loaded. Every message says what to do about it.
public enum PluginLoadError: Error, Sendable, CustomStringConvertible {
    /// Nothing exists at the path.
    case fileNotFound(path: String)
    /// The dynamic loader refused the file (not a shared library, wrong architecture, a
    /// dependency missing); `reason` is its message.
    case notALoadableLibrary(path: String, reason: String)
    /// The library needs Troupe symbols that the process does not provide: it was built
    /// against Troupe without linking it, and the host neither links `TroupeDynamic` nor
    /// exports its own Troupe symbols.
    case unresolvedRuntimeSymbols(path: String, reason: String)
    /// The library does not export `troupe_plugin_entry`.
    case missingEntryPoint(path: String, symbol: String)
    /// The entry point returned something that is not a Troupe plugin header.
    case invalidEntryPoint(path: String)
    /// The plugin was built against another plugin API version.
    case apiVersionMismatch(plugin: String, path: String, pluginAPI: UInt32, runtimeAPI: UInt32)
    /// This plugin (by library path or by name) is already loaded into this system.
    case alreadyLoaded(plugin: String, path: String)
    /// The library uses another copy of the Troupe module than the host (linked into it, or a
    /// `libTroupeDynamic.so` the host does not use), so its types are not the host's (Swift type
    /// identity is per copy): its actors could not run in this system.
    case separateRuntimeCopy(plugin: String, path: String)
    /// The plugin's registrations failed.
    case registrationFailed(plugin: String, path: String, RegistryError)

    public var description: String {
        switch self {
        case .fileNotFound(let path):
            return "no plugin library at \(path); build the plugin's dynamic library product "
                + "(swift build --product <Plugin>) and pass the path of the .so it produced"
        case .notALoadableLibrary(let path, let reason):
            return "\(path) is not a loadable shared library (\(reason)); pass the .so of a dynamic library product "
                + "built for this platform, with its dependencies on the library path"
        case .unresolvedRuntimeSymbols(let path, let reason):
            return "\(path) needs symbols the process does not provide (\(reason)); link the host against the "
                + "TroupeDynamic product, or export the host's Troupe symbols with `-Xlinker --export-dynamic`"
        case .missingEntryPoint(let path, let symbol):
            return "\(path) has no entry point `\(symbol)`; add `@_cdecl(\"\(symbol)\") public func entry() -> "
                + "UnsafeMutableRawPointer { PluginExport.entryPoint(for: MyPlugin()) }` to the plugin"
        case .invalidEntryPoint(let path):
            return "the entry point of \(path) did not return a Troupe plugin header; return "
                + "`PluginExport.entryPoint(for:)` from it"
        case .apiVersionMismatch(let plugin, let path, let pluginAPI, let runtimeAPI):
            return "plugin '\(plugin)' (\(path)) was built for Troupe plugin API \(pluginAPI), this runtime provides "
                + "\(runtimeAPI); rebuild the plugin against this version of Troupe"
        case .alreadyLoaded(let plugin, let path):
            return "plugin '\(plugin)' is already loaded into this system (\(path)); load each plugin once per system"
        case .separateRuntimeCopy(let plugin, let path):
            return
                "plugin '\(plugin)' (\(path)) uses another copy of the Troupe module than this host (one linked into "
                + "it, or a libTroupeDynamic.so the host does not use), so its types are not the host's; build the plugin "
                + "in its own package against the TroupeDynamic product (type: .dynamic), and have the host link "
                + "TroupeDynamic too or export its own Troupe symbols (-Xlinker --export-dynamic)"
        case .registrationFailed(let plugin, let path, let error):
            return "plugin '\(plugin)' (\(path)) could not register: \(error)"
        }
    }
}
