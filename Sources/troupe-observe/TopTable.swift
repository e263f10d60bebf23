/// What the terminal view asks for: the sort key, the search and how many rows.
struct TableView: Sendable {
    enum Sort: String, Sendable {
        case processed, depth, failures, restarts, name
    }

    var sort: Sort = .processed
    var search = ""
    var rows = 20
}

/// The terminal view's screen: a summary of the system, its workers, then the actors in the
/// view's order, cut to `width` columns. A pure function of the state document, so it is
/// tested without a terminal.
enum TopTable {
    static func render(_ state: [String: Any], view: TableView, width: Int) -> [String] {
        let system = state["system"] as? [String: Any] ?? [:]
        let deadLetters = system["deadLetters"] as? [String: Any] ?? [:]
        let actors = state["actors"] as? [[String: Any]] ?? []
        let matching = (state["view"] as? [String: Any])?["matching"] as? Int ?? actors.count
        var lines: [String] = []
        let rate = (system["messagesPerSecond"] as? Double).map { format(Int($0)) } ?? "–"
        lines.append(
            "\(system["name"] as? String ?? "?") — up \(format(state["uptimeSeconds"] as? Int ?? 0)) s, "
                + "\(format(system["actorCount"] as? Int ?? 0)) actors, \(rate) msg/s, "
                + "\(system["busyWorkers"] as? Int ?? 0) busy workers, "
                + "\(format(deadLetters["total"] as? Int ?? 0)) dead letters, "
                + "\(system["stuckHandlers"] as? Int ?? 0) stuck handlers")
        let mailbox = system["timeInMailbox"] as? [String: Any] ?? [:]
        let handler = system["handlerDuration"] as? [String: Any] ?? [:]
        lines.append("time in mailbox \(percentiles(mailbox)); handler \(percentiles(handler))")
        for worker in system["workers"] as? [[String: Any]] ?? [] {
            let index = worker["index"] as? Int ?? 0
            if let running = worker["running"] as? String {
                let time = (worker["runningForMs"] as? Int).map { " for \(format($0)) ms" } ?? ""
                lines.append("  worker \(index): \(running) (\(worker["messageType"] as? String ?? ""))\(time)")
            } else {
                lines.append("  worker \(index): idle")
            }
        }
        lines.append("")
        let search = view.search.isEmpty ? "" : ", matching \"\(view.search)\""
        lines.append(
            "actors by \(view.sort.rawValue)\(search): \(actors.count) of \(format(matching))   "
                + "[p]rocessed [d]epth [f]ailures [r]estarts [n]ame  [/] search  [+/-] rows  [q]uit")
        lines.append(
            pad("ACTOR", 34) + pad("TYPE", 26) + pad("STATE", 10) + padLeft("MAILBOX", 9) + padLeft("PROCESSED", 12)
                + padLeft("MSG/S", 9) + padLeft("FAIL", 6) + padLeft("RESTART", 8))
        for actor in actors {
            let depth = (actor["depth"] as? Int).map(format) ?? ((actor["pending"] as? Bool ?? false) ? "some" : "0")
            let rate = (actor["rate"] as? Double).map { format(Int($0)) } ?? "–"
            lines.append(
                pad(actor["address"] as? String ?? "?", 34) + pad(shortType(actor["type"] as? String ?? ""), 26)
                    + pad(actor["state"] as? String ?? "", 10) + padLeft(depth, 9)
                    + padLeft(format(actor["processed"] as? Int ?? 0), 12) + padLeft(rate, 9)
                    + padLeft(String(actor["failures"] as? Int ?? 0), 6)
                    + padLeft(String(actor["restarts"] as? Int ?? 0), 8))
        }
        return lines.map { String($0.prefix(max(width, 20))) }
    }

    /// `Module.Type<Module.Other>` without the module prefixes.
    static func shortType(_ name: String) -> String {
        name.split(separator: "<", omittingEmptySubsequences: false).map { part in
            part.split(separator: ".").last.map(String.init) ?? String(part)
        }.joined(separator: "<")
    }

    static func percentiles(_ histogram: [String: Any]) -> String {
        guard let count = histogram["count"] as? Int, count > 0 else { return "(no samples)" }
        func micro(_ key: String) -> String {
            guard let value = histogram[key] as? Double else { return "–" }
            return value < 10 ? String(Double(Int(value * 10)) / 10) : format(Int(value))
        }
        return "p50 \(micro("p50Us")) µs, p99 \(micro("p99Us")) µs (\(format(count)) samples)"
    }

    /// 1234567 as "1,234,567".
    static func format(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var grouped = ""
        for (offset, digit) in digits.enumerated() {
            if offset > 0, (digits.count - offset) % 3 == 0 { grouped += "," }
            grouped.append(digit)
        }
        return (value < 0 ? "-" : "") + grouped
    }

    static func pad(_ text: String, _ width: Int) -> String {
        let cut = text.count >= width ? String(text.prefix(width - 2)) + "…" : text
        return cut + String(repeating: " ", count: max(0, width - cut.count))
    }

    static func padLeft(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
