// troupe-observe: a top-like view of a running Troupe system in a terminal, from the same
// endpoint as TroupeObserver's page (for servers without a browser, or through an SSH session).
//
//   troupe-observe 'http://127.0.0.1:8081/?token=…'          the live view (q quits)
//   troupe-observe --once 'http://127.0.0.1:8081/?token=…'   one table on stdout, then exit
//   TROUPE_OBSERVER_URL=… troupe-observe                       the URL from the environment
//   troupe-observe --ca-file ca.pem 'https://host:8081/?token=…'   an observer over TLS whose
//                                                 certificate a CA of your own signed
//
// Keys: p, d, f, r, n sort by processed, mailbox depth, failures, restarts, name; / searches
// (Enter applies, Esc cancels); + and - change the number of rows; q quits.

#if canImport(Glibc)
    import Glibc
#endif

/// A line on stderr.
func complain(_ text: String) {
    Terminal.writeError("troupe-observe: \(text)\n")
}

var arguments = Array(CommandLine.arguments.dropFirst())
let once = arguments.contains("--once")
arguments.removeAll { $0 == "--once" }
if arguments.contains("--help") || arguments.contains("-h") {
    print(
        "usage: troupe-observe [--once] [--ca-file PEM] [URL]   (the URL the observer printed, http or https; or TROUPE_OBSERVER_URL; TROUPE_OBSERVER_CA_FILE)"
    )
    exit(0)
}
var caFile = getenv("TROUPE_OBSERVER_CA_FILE").map { String(cString: $0) }
if let index = arguments.firstIndex(of: "--ca-file") {
    guard index + 1 < arguments.count else {
        complain("--ca-file needs the path of a PEM file of the certificates to trust")
        exit(2)
    }
    caFile = arguments[index + 1]
    arguments.removeSubrange(index...(index + 1))
}
guard let url = arguments.first ?? getenv("TROUPE_OBSERVER_URL").map({ String(cString: $0) }) else {
    complain("give the observer's URL (http(s)://HOST:PORT/?token=…), or set TROUPE_OBSERVER_URL")
    exit(2)
}

let endpoint: ObserverEndpoint
do {
    endpoint = try ObserverEndpoint(url: url, caFile: caFile)
} catch {
    complain("\(error)")
    exit(2)
}

var view = TableView()
if once || !Terminal.isInteractive {
    do {
        let state = try endpoint.state(view)
        print(TopTable.render(state, view: view, width: 160).joined(separator: "\n"))
        exit(0)
    } catch {
        complain("\(error)")
        exit(1)
    }
}

Terminal.enterRawMode()
var searching: String?
var status = ""
loop: while true {
    var lines: [String]
    do {
        lines = TopTable.render(try endpoint.state(view), view: view, width: Terminal.width)
        status = ""
    } catch {
        lines = ["troupe-observe: \(error)", "retrying every second; q quits"]
    }
    if let searching { lines.append("search: \(searching)_") } else if !status.isEmpty { lines.append(status) }
    Terminal.draw(lines)
    // Keys until the next refresh (a key redraws at once).
    guard let key = Terminal.key(within: 1000) else { continue }
    if var text = searching {
        switch key {
        case 13, 10:
            view.search = text
            searching = nil
        case 27: searching = nil
        case 127, 8:
            if !text.isEmpty { text.removeLast() }
            searching = text
        default:
            if key >= 32 && key < 127 && text.count < 100 { text.append(Character(UnicodeScalar(key))) }
            searching = text
        }
        continue
    }
    switch UnicodeScalar(key) {
    case "q", "Q": break loop
    case "p": view.sort = .processed
    case "d": view.sort = .depth
    case "f": view.sort = .failures
    case "r": view.sort = .restarts
    case "n": view.sort = .name
    case "/": searching = view.search
    case "+", "=": view.rows = min(view.rows + 5, 500)
    case "-": view.rows = max(view.rows - 5, 5)
    default: status = "keys: p d f r n sort, / search, + - rows, q quit"
    }
}
Terminal.restore()
