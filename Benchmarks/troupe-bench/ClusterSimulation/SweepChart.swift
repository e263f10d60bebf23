// The cluster-sim sweep as one SVG: a panel per figure, a group of bars per cluster size (no
// script, no dependency: the chart is written by the run that measured it).

import Foundation

struct SweepChart {
    let points: [SweepPoint]
    /// The crash panel's target (5 probe periods + the suspicion timeout), drawn as a line.
    let detectionTarget: Duration

    private struct Series {
        let name: String
        let colour: String
        let values: [Double?]
    }

    private struct Panel {
        /// Two short lines: what is measured, and under which conditions.
        let title: String
        let subtitle: String
        let series: [Series]
        var target: (value: Double, label: String)? = nil
    }

    private static let blue = "#3b6ea5"
    private static let orange = "#d9822b"

    private var panels: [Panel] {
        [
            Panel(
                title: "Crash seen unreachable everywhere",
                subtitle: "seconds, silent crashes at 1 % loss",
                series: [
                    Series(
                        name: "median", colour: Self.blue, values: points.map { $0.unreachableMedian.map(Self.seconds) }
                    ),
                    Series(
                        name: "worst", colour: Self.orange,
                        values: points.map { $0.unreachableEverywhere.map(Self.seconds) }),
                ],
                target: (Self.seconds(detectionTarget), "target \(Self.formatted(Self.seconds(detectionTarget))) s")),
            Panel(
                title: "Membership traffic per node",
                subtitle: "bytes per node-second, 1 % loss",
                series: [Series(name: "bytes", colour: Self.blue, values: points.map { $0.bytesPerNodeSecond })]),
            Panel(
                title: "Healthy members suspected",
                subtitle: "per node-hour, 1 % loss and overloaded nodes",
                series: [
                    Series(
                        name: "Lifeguard on", colour: Self.blue,
                        values: points.map { $0.healthySuspicionsOverloaded.on }),
                    Series(
                        name: "Lifeguard off", colour: Self.orange,
                        values: points.map { $0.healthySuspicionsOverloaded.off }),
                ]),
        ]
    }

    var svg: String {
        let panelWidth = 330.0
        let (chartTop, chartHeight) = (78.0, 150.0)
        let height = chartTop + chartHeight + 30
        let width = panelWidth * Double(panels.count) + 20
        var out =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" font-family=\"sans-serif\" font-size=\"11\">\n"
        out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        for (index, panel) in panels.enumerated() {
            let left = 10 + panelWidth * Double(index)
            out +=
                "<text x=\"\(left + 5)\" y=\"16\" font-weight=\"bold\" font-size=\"12\">\(Self.escaped(panel.title))</text>\n"
            out += "<text x=\"\(left + 5)\" y=\"31\" fill=\"#555\">\(Self.escaped(panel.subtitle))</text>\n"
            // A legend when the panel has more than one series or a target line.
            if panel.series.count > 1 || panel.target != nil {
                var x = left + 5
                for series in panel.series {
                    out += "<rect x=\"\(x)\" y=\"39\" width=\"10\" height=\"10\" fill=\"\(series.colour)\"/>\n"
                    out += "<text x=\"\(x + 14)\" y=\"48\">\(Self.escaped(series.name))</text>\n"
                    x += 24 + Double(series.name.count) * 6
                }
                if let target = panel.target {
                    out +=
                        "<line x1=\"\(x)\" y1=\"44\" x2=\"\(x + 16)\" y2=\"44\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/>\n"
                    out += "<text x=\"\(x + 20)\" y=\"48\">\(Self.escaped(target.label))</text>\n"
                }
            }
            let largest = panel.series.flatMap { $0.values.compactMap { $0 } }.max() ?? 0
            let top = max(largest, panel.target?.value ?? 0, 1e-9)
            func y(_ value: Double) -> Double { chartTop + chartHeight - value / top * chartHeight }
            let groupWidth = (panelWidth - 40) / Double(max(1, points.count))
            let barWidth = min(44, (groupWidth - 16) / Double(panel.series.count))
            out +=
                "<line x1=\"\(left + 10)\" y1=\"\(chartTop + chartHeight)\" x2=\"\(left + panelWidth - 20)\" y2=\"\(chartTop + chartHeight)\" stroke=\"#999\"/>\n"
            for (column, point) in points.enumerated() {
                let groupLeft = left + 20 + Double(column) * groupWidth
                let barsLeft = groupLeft + (groupWidth - 16 - barWidth * Double(panel.series.count)) / 2
                for (seriesIndex, series) in panel.series.enumerated() {
                    let x = barsLeft + Double(seriesIndex) * barWidth
                    let value = series.values[column]
                    let barTop = y(value ?? 0)
                    out +=
                        "<rect x=\"\(x)\" y=\"\(barTop)\" width=\"\(barWidth - 2)\" height=\"\(chartTop + chartHeight - barTop)\" fill=\"\(series.colour)\"/>\n"
                    let label = value.map { Self.formatted($0) } ?? "–"
                    out +=
                        "<text x=\"\(x + (barWidth - 2) / 2)\" y=\"\(barTop - 4)\" text-anchor=\"middle\" font-size=\"10\">\(label)</text>\n"
                }
                out +=
                    "<text x=\"\(groupLeft + (groupWidth - 16) / 2)\" y=\"\(chartTop + chartHeight + 16)\" text-anchor=\"middle\">\(point.nodes) nodes</text>\n"
            }
            if let target = panel.target {
                let lineY = y(target.value)
                out +=
                    "<line x1=\"\(left + 10)\" y1=\"\(lineY)\" x2=\"\(left + panelWidth - 20)\" y2=\"\(lineY)\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/>\n"
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
