// The cluster-sim sweep as one SVG: a panel per figure, a bar per cluster size (no script, no
// dependency: the chart is written by the run that measured it).

import Foundation

struct SweepChart {
    let points: [SweepPoint]

    private struct Panel {
        let title: String
        let unit: String
        let values: [Double?]
    }

    private var panels: [Panel] {
        [
            Panel(
                title: "Crash seen unreachable by every node (worst of the crashes)", unit: "s",
                values: points.map { $0.unreachableEverywhere.map(Self.seconds) }),
            Panel(
                title: "Membership bytes per node per second (1 % loss)", unit: "B/s",
                values: points.map { $0.bytesPerNodeSecond }),
            Panel(
                title: "False suspicions per node-hour (Lifeguard on, 1 % loss)", unit: "",
                values: points.map { $0.falseSuspicionsPerNodeHour }),
        ]
    }

    var svg: String {
        let (panelWidth, panelHeight, barWidth) = (300.0, 220.0, 50.0)
        let width = panelWidth * Double(panels.count) + 20
        var out =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(panelHeight + 40))\" font-family=\"sans-serif\" font-size=\"11\">\n"
        out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        for (index, panel) in panels.enumerated() {
            let left = 10 + panelWidth * Double(index)
            out += "<text x=\"\(left + 5)\" y=\"18\" font-weight=\"bold\">\(Self.escaped(panel.title))</text>\n"
            let top = max(panel.values.compactMap { $0 }.max() ?? 1, 1e-9)
            let chartHeight = panelHeight - 60
            for (column, value) in panel.values.enumerated() {
                let x = left + 20 + Double(column) * (barWidth + 20)
                let height = (value ?? 0) / top * chartHeight
                let y = 30 + chartHeight - height
                out += "<rect x=\"\(x)\" y=\"\(y)\" width=\"\(barWidth)\" height=\"\(height)\" fill=\"#3b6ea5\"/>\n"
                let label = value.map { Self.formatted($0) + (panel.unit.isEmpty ? "" : " " + panel.unit) } ?? "–"
                out += "<text x=\"\(x + barWidth / 2)\" y=\"\(y - 4)\" text-anchor=\"middle\">\(label)</text>\n"
                out +=
                    "<text x=\"\(x + barWidth / 2)\" y=\"\(30 + chartHeight + 16)\" text-anchor=\"middle\">\(points[column].nodes) nodes</text>\n"
            }
        }
        return out + "</svg>\n"
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (whole, attoseconds) = duration.components
        return Double(whole) + Double(attoseconds) / 1e18
    }

    private static func formatted(_ value: Double) -> String {
        value >= 100 ? String(Int(value.rounded())) : String((value * 100).rounded() / 100)
    }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
    }
}
