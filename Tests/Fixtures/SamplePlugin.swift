// A sample loadable plugin, a fixture of the plugin-loading tests (Tests/TroupeRegistryTests),
// which compile it into a shared library and load it with `system.loadPlugin(at:)`. Its actors take standard-library payloads (String,
// Int) so that a host that never imports this module can talk to them.
import Troupe

/// The one symbol the host looks up. Keep it exactly like this in every plugin.
@_cdecl("troupe_plugin_entry")
public func troupePluginEntry() -> UnsafeMutableRawPointer {
    PluginExport.entryPoint(for: SamplePlugin())
}

/// Registers a greeter singleton and a pool of two echo actors.
public struct SamplePlugin: TroupePlugin {
    public init() {}

    public var descriptor: PluginDescriptor {
        PluginDescriptor(name: "TroupeSamplePlugin", version: "1.0.0")
    }

    public func register(into registrar: ActorRegistrar) throws {
        try registrar.singleton(name: "sample.greeter") { Greeter(salutation: "Hello") }
        try registrar.pool(size: 2, routing: .roundRobin, name: "sample.echo") { index in Echo(member: index) }
    }
}

/// Greets by name (a `String`) and reports how many it greeted (ask with any `Int`).
struct Greeter: HandlerActor {
    let salutation: String
    var greeted = 0

    mutating func setup(_ on: inout MessageHandlers<Greeter>) {
        on.result(String.self) { greeter, name, _ in
            greeter.greeted += 1
            return "\(greeter.salutation), \(name)!"
        }
        on.result(Int.self) { greeter, _, _ in greeter.greeted }
    }
}

/// Answers a `String` with the member's number and the text.
struct Echo: HandlerActor {
    let member: Int

    mutating func setup(_ on: inout MessageHandlers<Echo>) {
        on.result(String.self) { echo, text, _ in "echo-\(echo.member): \(text)" }
    }
}
