#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Testing

/// Plugin libraries for the loading tests, compiled from sources with `swiftc` against this
/// build's `Modules/` directory (the sample plugin is a fixture, Tests/Fixtures/SamplePlugin.swift,
/// not a product of the package).
///
/// A plugin that shares the host's Troupe is built against the Troupe module without linking
/// it: the test binary (linked with `--export-dynamic`) provides its Troupe symbols. A plugin
/// that carries its own copy of Troupe, as a dynamic library product of a package that depends
/// on `Troupe` would, is linked with the object files SwiftPM links into the `TroupeDynamic`
/// product: the host must refuse it (its types are not the host's). Each library is built once
/// per test process; a failure is reported with the compiler's output, never skipped.
enum PluginFixtures {
    /// SwiftPM's products directory: where the running test binary lives.
    static let productsDirectory: String = {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        precondition(length > 0, "readlink(/proc/self/exe) failed")
        let executable = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return directory(of: executable)
    }()

    /// The package root, found from this file's path (Tests/TroupePluginsTests/Support/…).
    static let packageRoot: String = packageRoot(from: #filePath)

    /// The sample plugin's sources.
    static var sampleSources: [String] { [packageRoot + "/Tests/Fixtures/SamplePlugin.swift"] }

    /// The sample plugin built against the host's Troupe (one copy of Troupe).
    static let sharedSample: Result<String, FixtureError> = compile(
        module: "TroupeSamplePluginShared", sources: sampleSources)

    /// The sample plugin linked with its own copy of Troupe (the `TroupeDynamic` product's objects).
    static let ownCopySample: Result<String, FixtureError> = {
        let objectList = productsDirectory + "/TroupeDynamic.product/Objects.LinkFileList"
        guard exists(objectList) else {
            return .failure(
                FixtureError("\(objectList) is missing: `swift build --build-tests` builds the TroupeDynamic product"))
        }
        let objects = read(objectList).split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        return compile(
            module: "TroupeSamplePluginOwnCopy", sources: sampleSources,
            linking: objects + ["-lurcu-cds", "-lurcu-common"])
    }()

    /// A plugin whose header declares the next plugin API version.
    static let futureAPIPlugin: Result<String, FixtureError> = compile(
        module: "TroupeFutureAPIPlugin",
        source: """
            import Troupe

            @_cdecl("troupe_plugin_entry")
            public func troupePluginEntry() -> UnsafeMutableRawPointer {
                let header = UnsafeMutablePointer<PluginEntryHeader>.allocate(capacity: 1)
                header.initialize(to: PluginEntryHeader(
                    apiVersion: PluginAPI.version + 1, name: PluginExport.cString("FuturePlugin"),
                    version: PluginExport.cString("9.0.0"), plugin: nil))
                return UnsafeMutableRawPointer(header)
            }
            """)

    /// A plugin whose entry point returns something else than a plugin header.
    static let badHeaderPlugin: Result<String, FixtureError> = compile(
        module: "TroupeBadHeaderPlugin",
        source: """
            @_cdecl("troupe_plugin_entry")
            public func troupePluginEntry() -> UnsafeMutableRawPointer {
                let bytes = UnsafeMutablePointer<UInt64>.allocate(capacity: 8)
                bytes.initialize(repeating: 0x0BAD_F00D, count: 8)
                return UnsafeMutableRawPointer(bytes)
            }
            """)

    /// A shared library of the system that has no plugin entry point (the C math library,
    /// which every Swift process maps).
    static var libraryWithoutEntryPoint: String {
        mappedLibrary(named: "libm.so") ?? "/lib/x86_64-linux-gnu/libm.so.6"
    }

    /// The path of a shared library mapped into this process whose file name starts with
    /// `prefix`, from /proc/self/maps.
    static func mappedLibrary(named prefix: String) -> String? {
        for line in read("/proc/self/maps").split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let path = String(line[slash...])
            if directory(of: path).isEmpty { continue }
            let file = path[path.index(after: path.lastIndex(of: "/")!)...]
            if file.hasPrefix(prefix) { return path }
        }
        return nil
    }

    /// A scratch directory for this test process.
    static let scratch: String = {
        var template = Array("/tmp/troupe-registry-tests-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { preconditionFailure("mkdtemp failed: errno \(errno)") }
        return String(cString: made)
    }()

    // MARK: Files

    static func write(_ text: String, to path: String) {
        guard let file = fopen(path, "w") else { preconditionFailure("cannot write \(path): errno \(errno)") }
        fputs(text, file)
        fclose(file)
    }

    static func read(_ path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            bytes.append(contentsOf: chunk.prefix(count))
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Copies the file at `path` into the scratch directory under `name`; returns the copy's path.
    static func copy(_ path: String, as name: String) -> String {
        let target = scratch + "/" + name
        let contents = readBytes(path)
        guard let file = fopen(target, "w") else { preconditionFailure("cannot write \(target)") }
        _ = contents.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
        return target
    }

    private static func readBytes(_ path: String) -> [UInt8] {
        guard let file = fopen(path, "r") else { preconditionFailure("cannot read \(path)") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            bytes.append(contentsOf: chunk.prefix(count))
        }
        return bytes
    }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    // MARK: Compiling

    private static func compile(module: String, source: String) -> Result<String, FixtureError> {
        let path = scratch + "/\(module).swift"
        write(source, to: path)
        return compile(module: module, sources: [path])
    }

    /// Builds a shared library from `sources` against the Troupe module of this build. Without
    /// `linking` Troupe's objects, its Troupe symbols stay undefined and bind to the host's at
    /// load time.
    private static func compile(
        module: String, sources: [String], linking: [String] = []
    ) -> Result<String, FixtureError> {
        let modules = productsDirectory + "/Modules"
        let ctroupeMap = productsDirectory + "/CTroupe.build/module.modulemap"
        for required in [modules + "/Troupe.swiftmodule", ctroupeMap] where !exists(required) {
            return .failure(
                FixtureError("\(required) is missing: run `swift build --build-tests` for this scratch path first"))
        }
        guard let compiler = swiftCompiler() else {
            return .failure(
                FixtureError(
                    "no swiftc found on PATH or next to the Swift runtime; put the toolchain's bin directory on PATH"))
        }
        let output = scratch + "/lib\(module).so"
        let arguments =
            [
                compiler, "-emit-library", "-parse-as-library", "-swift-version", "6", "-module-name", module,
                "-I", modules,
                "-Xcc", "-fmodule-map-file=\(ctroupeMap)",
                "-Xcc", "-I", "-Xcc", packageRoot + "/Sources/CTroupe/include",
                "-Xcc", "-fmodule-map-file=\(packageRoot)/Sources/CURCU/module.modulemap",
                "-module-cache-path", scratch + "/ModuleCache",
            ]
            + sources + linking + ["-o", output]
        let log = scratch + "/\(module).log"
        let status = run(arguments, log: log)
        guard status == 0, exists(output) else {
            return .failure(
                FixtureError(
                    "swiftc failed (status \(status)) building \(module):\n\(arguments.joined(separator: " "))\n\(read(log))"
                ))
        }
        return .success(output)
    }

    private static func swiftCompiler() -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? ""
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/swiftc"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        // Next to the runtime the test runs on: <toolchain>/usr/lib/swift/linux/libswiftCore.so.
        guard let runtime = mappedLibrary(named: "libswiftCore.so") else { return nil }
        let candidate = directory(of: directory(of: directory(of: directory(of: runtime)))) + "/bin/swiftc"
        return access(candidate, X_OK) == 0 ? candidate : nil
    }

    /// Runs a program with stdout and stderr into `log`; returns its exit status.
    private static func run(_ arguments: [String], log: String) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // The compiler needs little of the environment: pass what it may look at.
        let names: [String] = ["PATH", "HOME", "TMPDIR", "LANG", "SDKROOT"]
        let inherited = names.compactMap { (name: String) -> String? in
            getenv(name).map { "\(name)=\(String(cString: $0))" }
        }
        let envp: [UnsafeMutablePointer<CChar>?] = inherited.map { strdup($0) } + [nil]
        defer { envp.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard spawned == 0 else { return -spawned }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    private static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return String(path[..<slash])
    }

    private static func packageRoot(from file: String) -> String {
        var path = file
        for _ in 0..<4 { path = directory(of: path) }
        return path
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
