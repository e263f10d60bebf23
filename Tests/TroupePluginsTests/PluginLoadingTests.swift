import Testing
import Troupe
import TroupeTestSupport

/// Plugins built as shared libraries, loaded at run time. See ``PluginFixtures`` for how the
/// libraries are built and why the SwiftPM product is refused.
@Suite(.serialized) struct PluginLoadingTests {
    /// The sample plugin sharing the host's Troupe, or a recorded failure (never a skip).
    private func sharedSample(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        switch PluginFixtures.sharedSample {
        case .success(let path): return path
        case .failure(let error):
            Issue.record("could not build the sample plugin: \(error)", sourceLocation: sourceLocation)
            throw error
        }
    }

    @Test func aPluginSharingTheHostsTroupeLoadsAndItsActorsAnswer() async throws {
        let path = try sharedSample()
        try await withTestSystem { system in
            let descriptor = try system.loadPlugin(at: path)
            #expect(
                descriptor
                    == PluginDescriptor(name: "TroupeSamplePlugin", version: "1.0.0", apiVersion: PluginAPI.version))
            #expect(system.installedPlugins == [descriptor])

            // Spawned by name (created on first access), messages both ways.
            let greeter = try system.actor(named: "sample.greeter", accepting: AnyMessage.self)
            #expect(greeter.tell("Ada") == .enqueued)
            let greeting: String = try await greeter.ask("Grace")
            #expect(greeting == "Hello, Grace!")
            let greeted: Int = try await greeter.ask(0)
            #expect(greeted == 2)
            #expect(greeter.address.name == "sample.greeter")

            let echo = try system.pool(named: "sample.echo", accepting: AnyMessage.self)
            let first: String = try await echo.ask("one")
            let second: String = try await echo.ask("two")
            #expect(Set([first, second]) == ["echo-0: one", "echo-1: two"])

            #expect(system.registeredActors.map(\.name) == ["sample.echo", "sample.greeter"])
            #expect(system.registeredActors.allSatisfy { $0.plugin == "TroupeSamplePlugin" })

            // A message type the plugin's actor has no handler for: a dead letter, not a crash.
            let unhandled = await askResult { () async throws -> String in try await greeter.ask(3.5) }
            #expect(unhandled.askError?.kind == .undeliverable)
        }
    }

    @Test func aBuilderLoadsPluginsBeforeTheSystemStarts() async throws {
        let path = try sharedSample()
        let builder = SystemBuilder(configuration: .init(workerCount: 2, pinWorkers: false, logger: quietLogger))
        try builder.singleton(name: "local") { Counter() }
        let descriptor = try builder.loadPlugin(at: path)
        expectError(PluginLoadError.self, { try builder.loadPlugin(at: path) }) {
            if case .alreadyLoaded("TroupeSamplePlugin", path) = $0 { true } else { false }
        }
        let system = try builder.build()
        #expect(system.installedPlugins == [descriptor])
        let greeter = try system.actor(named: "sample.greeter", accepting: AnyMessage.self)
        let greeting: String = try await greeter.ask("builder")
        #expect(greeting == "Hello, builder!")
        // The system remembers the library: loading it again is refused.
        expectError(PluginLoadError.self, { try system.loadPlugin(at: path) }) {
            if case .alreadyLoaded("TroupeSamplePlugin", _) = $0 { true } else { false }
        }
        await system.shutdown()
    }

    @Test func loadingThePluginTwiceIsAnErrorNotADoubleRegistration() async throws {
        let path = try sharedSample()
        try await withTestSystem { system in
            try system.loadPlugin(at: path)
            let again = expectError(PluginLoadError.self, { try system.loadPlugin(at: path) }) {
                if case .alreadyLoaded("TroupeSamplePlugin", path) = $0 { true } else { false }
            }
            #expect(again?.description.contains("load each plugin once") == true)
            // The same plugin from another file: refused by its name.
            let copy = PluginFixtures.copy(path, as: "libTroupeSamplePluginCopy.so")
            expectError(PluginLoadError.self, { try system.loadPlugin(at: copy) }) {
                if case .alreadyLoaded("TroupeSamplePlugin", copy) = $0 { true } else { false }
            }
            #expect(system.registeredActors.count == 2)
            #expect(system.installedPlugins.count == 1)
        }
        // Another system loads it again: plugins are installed per system.
        try await withTestSystem { system in
            try system.loadPlugin(at: path)
            let greeting: String = try await system.actor(named: "sample.greeter", accepting: AnyMessage.self).ask(
                "again")
            #expect(greeting == "Hello, again!")
        }
    }

    @Test func aPluginCarryingItsOwnTroupeIsRefused() async throws {
        let path: String
        switch PluginFixtures.ownCopySample {
        case .success(let built): path = built
        case .failure(let error): Issue.record("\(error)"); return
        }
        try await withTestSystem { system in
            let error = expectError(PluginLoadError.self, { try system.loadPlugin(at: path) }) {
                if case .separateRuntimeCopy("TroupeSamplePlugin", path) = $0 { true } else { false }
            }
            #expect(error?.description.contains("TroupeDynamic") == true)
            #expect(system.registeredActors.isEmpty)
            #expect(system.installedPlugins.isEmpty)
        }
    }

    @Test func aMissingFileIsRefused() async throws {
        try await withTestSystem { system in
            let error = expectError(PluginLoadError.self, { try system.loadPlugin(at: "/nonexistent/libNothing.so") }) {
                if case .fileNotFound("/nonexistent/libNothing.so") = $0 { true } else { false }
            }
            #expect(error?.description.contains("swift build --product") == true)
        }
    }

    @Test func aFileThatIsNotALibraryIsRefused() async throws {
        let path = PluginFixtures.scratch + "/not-a-plugin.so"
        PluginFixtures.write("plain text, not ELF\n", to: path)
        try await withTestSystem { system in
            expectError(PluginLoadError.self, { try system.loadPlugin(at: path) }) {
                if case .notALoadableLibrary(path, let reason) = $0 { !reason.isEmpty } else { false }
            }
        }
    }

    @Test func aLibraryWithoutTheEntryPointIsRefused() async throws {
        let path = PluginFixtures.libraryWithoutEntryPoint
        try await withTestSystem { system in
            let error = expectError(PluginLoadError.self, { try system.loadPlugin(at: path) }) {
                if case .missingEntryPoint(path, "troupe_plugin_entry") = $0 { true } else { false }
            }
            #expect(error?.description.contains("@_cdecl(\"troupe_plugin_entry\")") == true)
        }
    }

    @Test func aPluginForAnotherAPIVersionIsRefused() async throws {
        let path = try PluginFixtures.futureAPIPlugin.get()
        try await withTestSystem { system in
            let error = expectError(PluginLoadError.self, { try system.loadPlugin(at: path) }) {
                if case .apiVersionMismatch("FuturePlugin", path, let plugin, let runtime) = $0 {
                    plugin == PluginAPI.version + 1 && runtime == PluginAPI.version
                } else {
                    false
                }
            }
            #expect(error?.description.contains("rebuild the plugin") == true)
        }
    }

    @Test func anEntryPointReturningSomethingElseIsRefused() async throws {
        let path = try PluginFixtures.badHeaderPlugin.get()
        try await withTestSystem { system in
            expectError(PluginLoadError.self, { try system.loadPlugin(at: path) }) {
                if case .invalidEntryPoint(path) = $0 { true } else { false }
            }
        }
    }

    @Test func aPluginWhoseNamesAreTakenRegistersNothing() async throws {
        let path = try sharedSample()
        try await withTestSystem { system in
            try system.register { try $0.singleton(name: "sample.greeter") { Counter() } }
            let error = expectError(PluginLoadError.self, { try system.loadPlugin(at: path) }) {
                if case .registrationFailed(
                    "TroupeSamplePlugin", path, .duplicateName("sample.greeter", "Counter", nil)) = $0
                {
                    true
                } else {
                    false
                }
            }
            #expect(error?.description.contains("another name") == true)
            #expect(system.registeredActors.map(\.name) == ["sample.greeter"])
            #expect(system.installedPlugins.isEmpty)
        }
    }
}
