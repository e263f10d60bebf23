#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A plugin library opened and checked, ready to register.
struct LoadedPluginLibrary {
    let plugin: any TroupePlugin
    let descriptor: PluginDescriptor
    let realPath: String
}

/// Opens plugin libraries. Libraries stay loaded for the life of the process: unloading a
/// Swift image is unsupported (the runtime keeps pointers into its metadata), so a library
/// that was refused after `dlopen` stays mapped too.
enum PluginLibraryLoader {
    /// The canonical path of `path`, or `.fileNotFound`.
    static func realPath(of path: String) throws(PluginLoadError) -> String {
        guard let resolved = realpath(path, nil) else { throw .fileNotFound(path: path) }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Opens the library, calls its entry point and checks the header and the type identity.
    ///
    /// `RTLD_NOW` makes every unresolved symbol fail here, with a message, rather than at
    /// first use. `RTLD_LOCAL` keeps one plugin's symbols from resolving another's (two
    /// plugins may well contain a module of the same name); the plugin still binds to the
    /// host's Troupe, which is in the global scope (the executable, or `libTroupeDynamic.so`
    /// it links).
    static func open(path: String, realPath: String) throws(PluginLoadError) -> LoadedPluginLibrary {
        guard let handle = dlopen(realPath, RTLD_NOW | RTLD_LOCAL) else {
            let reason = lastError()
            if reason.contains("undefined symbol") { throw .unresolvedRuntimeSymbols(path: path, reason: reason) }
            throw .notALoadableLibrary(path: path, reason: reason)
        }
        guard let symbol = dlsym(handle, PluginAPI.entryPointSymbol) else {
            throw .missingEntryPoint(path: path, symbol: PluginAPI.entryPointSymbol)
        }
        typealias EntryPoint = @convention(c) () -> UnsafeMutableRawPointer?
        // Safety: the symbol is `troupe_plugin_entry`, which a plugin declares with `@_cdecl` as
        // `() -> UnsafeMutableRawPointer` (PluginExport's contract); the header checks below catch the rest.
        let entry = unsafeBitCast(symbol, to: EntryPoint.self)
        guard let raw = entry() else { throw .invalidEntryPoint(path: path) }

        // The frozen prefix first: magic, API version, size, name, version.
        // A refused export is leaked on purpose (a few dozen bytes, once per refused load): its
        // header has a wrong magic, size or API version, so its layout (and with it where its
        // strings and plugin object are, and how they were allocated) cannot be trusted, and
        // freeing it could corrupt the heap. CI's leak check suppresses exactly this
        // (`.ci/lsan-suppressions.txt`).
        // Safety: the entry point returns a `PluginEntryHeader` it allocated; its frozen prefix (magic
        // and size first) has the same layout in every Troupe version, so these reads are in bounds.
        let header = raw.assumingMemoryBound(to: PluginEntryHeader.self)
        guard header.pointee.magic == PluginEntryHeader.expectedMagic,
            header.pointee.headerSize >= UInt32(MemoryLayout<PluginEntryHeader>.offset(of: \.plugin)!)
        else {
            throw .invalidEntryPoint(path: path)
        }
        let name = header.pointee.name.map { String(cString: $0) } ?? "(unnamed)"
        let version = header.pointee.version.map { String(cString: $0) } ?? "?"
        let apiVersion = header.pointee.apiVersion
        guard apiVersion == PluginAPI.version else {
            // The rest of the header may have another layout: leave it (and the plugin) alone.
            throw .apiVersionMismatch(plugin: name, path: path, pluginAPI: apiVersion, runtimeAPI: PluginAPI.version)
        }
        // Safety: the API version matched, so the header has this layout; the plugin allocated it and
        // its strings with the Swift allocator (`PluginExport`), and the host owns and frees each once.
        let boxPointer = header.pointee.plugin
        header.pointee.name?.deallocate()
        header.pointee.version?.deallocate()
        header.deinitialize(count: 1)
        header.deallocate()

        guard let boxPointer else { throw .invalidEntryPoint(path: path) }
        // Safety: `plugin` is the +1 retained box `PluginExport.entryPoint` made; taking it back once
        // balances it, and any Swift object is an `AnyObject` even from a library with its own Troupe.
        let object = Unmanaged<AnyObject>.fromOpaque(boxPointer).takeRetainedValue()
        guard let box = object as? PluginExportBox else {
            throw .separateRuntimeCopy(plugin: name, path: path)
        }
        let descriptor = PluginDescriptor(name: name, version: version, apiVersion: apiVersion)
        return LoadedPluginLibrary(plugin: box.plugin, descriptor: descriptor, realPath: realPath)
    }

    private static func lastError() -> String {
        guard let message = dlerror() else { return "unknown dlopen error" }
        return String(cString: message)
    }
}

/// A plugin built as a shared library, as it registers: the library's own descriptor
/// (header) wins over what the plugin object reports, so that the name checked for double
/// loading is the one the library declared.
private struct LibraryPlugin: TroupePlugin {
    let loaded: LoadedPluginLibrary
    var descriptor: PluginDescriptor { loaded.descriptor }
    func register(into registrar: ActorRegistrar) throws { try loaded.plugin.register(into: registrar) }
}

extension ActorRegistrar {
    /// Loads, checks and registers the plugin at `path` into this registrar.
    func loadPlugin(
        at path: String, alreadyInSystem: (_ realPath: String, _ name: String?) -> String?
    ) throws(PluginLoadError) -> LoadedPluginLibrary {
        let realPath = try PluginLibraryLoader.realPath(of: path)
        if let name = libraries[realPath] ?? alreadyInSystem(realPath, nil) {
            throw .alreadyLoaded(plugin: name, path: path)
        }
        let loaded = try PluginLibraryLoader.open(path: path, realPath: realPath)
        let name = loaded.descriptor.name
        if plugins[name] != nil || alreadyInSystem(realPath, name) != nil {
            throw .alreadyLoaded(plugin: name, path: path)
        }
        do throws(RegistryError) {
            try install(LibraryPlugin(loaded: loaded))
        } catch {
            throw .registrationFailed(plugin: name, path: path, error)
        }
        libraries[realPath] = name
        return loaded
    }
}

extension ActorSystem {
    /// Loads the plugin library at `path` (a `.so` built from a dynamic library product that
    /// exports `troupe_plugin_entry`) and registers its actors, services and hooks; then look
    /// its actors up by name:
    ///
    /// ```swift
    /// let plugin = try system.loadPlugin(at: "/opt/app/plugins/libGreeter.so")
    /// let greeter = try system.actor(named: "greeter", accepting: AnyMessage.self)
    /// let text: String = try await greeter.ask("Ada")
    /// ```
    ///
    /// Fails with ``PluginLoadError``: missing file, not a library, no entry point, API version
    /// mismatch, loaded twice (same file or same plugin name), a library with its own copy of
    /// Troupe, a failed registration. Any thread; loading blocks while the library loads.
    @discardableResult
    public func loadPlugin(at path: String) throws(PluginLoadError) -> PluginDescriptor {
        let registrar = ActorRegistrar(services: services)
        let providers = self.providers
        let loaded = try registrar.loadPlugin(at: path) { realPath, name in
            if let name { return providers.isInstalled(plugin: name) ? name : nil }
            return providers.pluginLoaded(fromLibrary: realPath)
        }
        do throws(RegistryError) {
            try providers.commit(registrar, into: self)
        } catch {
            if case .pluginAlreadyInstalled(let name) = error { throw .alreadyLoaded(plugin: name, path: path) }
            throw .registrationFailed(plugin: loaded.descriptor.name, path: path, error)
        }
        return loaded.descriptor
    }
}
