/// `troupe-cluster-node`'s command line.
struct NodeOptions {
    var host = "127.0.0.1"
    var port = 0
    var seeds: [(host: String, port: Int)] = []
    var secret = ""
    var probeInterval: Duration = .seconds(1)
    var suspicionTimeout: Duration = .seconds(3)
    var downAfter: Duration = .seconds(10)
    var handshakeTimeout: Duration = .seconds(5)
    var incompleteFrameTimeout: Duration = .seconds(10)
    /// Serve TroupeObserver's page for this node on 127.0.0.1 at this port (0: any free one).
    var observerPort: Int?
    var observerToken: String?
    /// Hold the entity kind "demo" (TroupeClusterEntities): one durable entity per key, its
    /// events in a journal in memory.
    var entities = false
    /// Once the kind has `entityMembers` members, send one message to each of this many keys.
    var activate = 0
    var entityMembers = 1

    static let usage = """
        usage: troupe-cluster-node --secret SECRET [--host HOST] [--port PORT] [--seed HOST:PORT]...
                                   [--probe-ms MS] [--suspicion-ms MS] [--down-ms MS]
                                   [--handshake-ms MS] [--incomplete-frame-ms MS]
                                   [--observer-port PORT [--observer-token TOKEN]]
                                   [--entities [--activate N [--entity-members M]]]
        Starts one Troupe cluster node with an echo actor checked in under "echo" (and, with
        --entities, a region of the entity kind "demo"), and prints one line per event on stdout:
          OBSERVER <url>               its TroupeObserver page (with --observer-port), before READY
          READY <node>                 bound and started
          ENTITIES <n>                 (with --activate) n keys of the kind "demo" sent a message
          MEMBER <node> <status> <ns>  a membership change, with CLOCK_MONOTONIC nanoseconds
          REMOVED                      the cluster marked this node down (then exit status 3)
        SIGTERM or SIGINT leaves the cluster and exits with status 0; bad options exit with 64.
        """

    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    init(arguments: [String]) throws(Invalid) {
        var rest = arguments[...]
        func value(_ flag: String) throws(Invalid) -> String {
            guard let next = rest.popFirst() else { throw Invalid(description: "\(flag) needs a value") }
            return next
        }
        func milliseconds(_ flag: String) throws(Invalid) -> Duration {
            let text = try value(flag)
            guard let ms = Int(text), ms > 0 else {
                throw Invalid(description: "\(flag) takes a positive number of milliseconds, not \(text)")
            }
            return .milliseconds(ms)
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--host": host = try value(flag)
            case "--port":
                let text = try value(flag)
                guard let port = Int(text), (0...65535).contains(port) else {
                    throw Invalid(description: "--port takes 0...65535, not \(text)")
                }
                self.port = port
            case "--seed":
                let text = try value(flag)
                let parts = text.split(separator: ":")
                guard parts.count == 2, let port = Int(parts[1]) else {
                    throw Invalid(description: "--seed takes HOST:PORT, not \(text)")
                }
                seeds.append((String(parts[0]), port))
            case "--secret": secret = try value(flag)
            case "--probe-ms": probeInterval = try milliseconds(flag)
            case "--suspicion-ms": suspicionTimeout = try milliseconds(flag)
            case "--down-ms": downAfter = try milliseconds(flag)
            case "--handshake-ms": handshakeTimeout = try milliseconds(flag)
            case "--incomplete-frame-ms": incompleteFrameTimeout = try milliseconds(flag)
            case "--observer-port":
                let text = try value(flag)
                guard let port = Int(text), (0...65535).contains(port) else {
                    throw Invalid(description: "--observer-port takes 0...65535, not \(text)")
                }
                observerPort = port
            case "--observer-token": observerToken = try value(flag)
            case "--entities": entities = true
            case "--activate":
                let text = try value(flag)
                guard let count = Int(text), count >= 0 else {
                    throw Invalid(description: "--activate takes a number of keys, not \(text)")
                }
                activate = count
            case "--entity-members":
                let text = try value(flag)
                guard let count = Int(text), count >= 1 else {
                    throw Invalid(description: "--entity-members takes a positive count, not \(text)")
                }
                entityMembers = count
            case "--help", "-h": throw Invalid(description: Self.usage)
            default: throw Invalid(description: "unknown option \(flag)\n\(Self.usage)")
            }
        }
        guard !secret.isEmpty else { throw Invalid(description: "--secret is required\n\(Self.usage)") }
        if activate > 0 && !entities { throw Invalid(description: "--activate goes with --entities") }
        if observerToken != nil && observerPort == nil {
            throw Invalid(description: "--observer-token goes with --observer-port")
        }
    }
}
