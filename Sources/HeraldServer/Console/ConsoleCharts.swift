import Foundation
import HeraldStore

/// SVG charts drawn by the server. Each one is legible without colour: every bar carries its value as text, series
/// differ by pattern as well as colour, and the chart has a text alternative (`role="img"` with a label, and
/// `<title>`s on the bars).
enum ConsoleCharts {
    /// A series of a stacked chart: its name and a CSS class (`s1`, `s2`, `s3`) with a pattern.
    struct Series {
        let name: String
        let style: Int
    }

    /// The fills of the three series: solid, diagonal hatching, dots.
    private static let definitions = """
        <defs>\
        <pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">\
        <rect width="6" height="6" class="s2"/><line x1="0" y1="0" x2="0" y2="6" stroke="#fff" stroke-width="2"/></pattern>\
        <pattern id="dots" width="6" height="6" patternUnits="userSpaceOnUse">\
        <rect width="6" height="6" class="s3"/><circle cx="3" cy="3" r="1.4" fill="#fff"/></pattern>\
        </defs>
        """

    private static func fill(_ style: Int) -> String {
        switch style {
        case 2: "fill=\"url(#hatch)\""
        case 3: "fill=\"url(#dots)\""
        default: "class=\"s1\""
        }
    }

    /// Horizontal bars, one per tally, labelled with name and value.
    static func bars(_ tallies: [Tally], label: String, emptyName: String = "unknown") -> String {
        let rowHeight = 26
        let width = 420
        let labelWidth = 140
        let maximum = max(1, tallies.map(\.count).max() ?? 1)
        let height = max(rowHeight, tallies.count * rowHeight)
        var svg = svgOpen(width: width, height: height, label: label)
        for (index, tally) in tallies.enumerated() {
            let y = index * rowHeight
            let raw = tally.name.isEmpty ? emptyName : tally.name
            let name = HTML.escape(raw)
            let barWidth = max(2, (width - labelWidth - 70) * tally.count / maximum)
            svg += """
                <text x="0" y="\(y + 17)">\(HTML.escape(truncate(raw)))</text>\
                <rect x="\(labelWidth)" y="\(y + 5)" width="\(barWidth)" height="16" class="s1">\
                <title>\(name): \(tally.count)</title></rect>\
                <text x="\(labelWidth + barWidth + 6)" y="\(y + 17)">\(tally.count)</text>
                """
        }
        return svg + "</svg>"
    }

    /// Vertical bars per day, stacked by series, with the total above each day and a legend below.
    static func days(
        _ days: [(day: Date, values: [Int])], series: [Series], label: String
    ) -> String {
        let width = 460
        let height = 200
        let bottom = 170
        let top = 20
        let columnWidth = max(12, (width - 20) / max(1, days.count))
        let maximum = max(1, days.map { $0.values.reduce(0, +) }.max() ?? 1)
        var svg = svgOpen(width: width, height: height, label: label) + definitions
        svg += "<line class=\"axis\" x1=\"0\" y1=\"\(bottom)\" x2=\"\(width)\" y2=\"\(bottom)\" stroke-width=\"1\"/>"
        let formatter = dayFormatter()
        for (index, day) in days.enumerated() {
            let x = 10 + index * columnWidth
            var y = bottom
            let date = formatter.string(from: day.day)
            for (position, value) in day.values.enumerated() where value > 0 {
                let barHeight = max(1, (bottom - top) * value / maximum)
                y -= barHeight
                let item = series[min(position, series.count - 1)]
                svg += """
                    <rect x="\(x + 2)" y="\(y)" width="\(columnWidth - 4)" height="\(barHeight)" \(fill(item.style))>\
                    <title>\(date): \(value) \(HTML.escape(item.name))</title></rect>
                    """
            }
            let total = day.values.reduce(0, +)
            if total > 0 {
                svg += "<text x=\"\(x + columnWidth / 2)\" y=\"\(y - 4)\" text-anchor=\"middle\">\(total)</text>"
            }
            // Beyond a week, every other day is labelled so that the labels do not overlap.
            if days.count <= 7 || (days.count - 1 - index).isMultiple(of: 2) {
                svg += "<text class=\"label\" x=\"\(x + columnWidth / 2)\" y=\"\(bottom + 16)\" text-anchor=\"middle\">\(date)</text>"
            }
        }
        svg += "</svg>"
        guard series.count > 1 else { return svg }
        let legend = series.map { item in
            "<li><svg width=\"14\" height=\"14\" aria-hidden=\"true\">\(definitions)<rect width=\"14\" height=\"14\" \(fill(item.style))/></svg>\(HTML.escape(item.name))</li>"
        }
        return svg + "<ul class=\"legend\">" + legend.joined() + "</ul>"
    }

    private static func svgOpen(width: Int, height: Int, label: String) -> String {
        "<svg class=\"chart\" viewBox=\"0 0 \(width) \(height)\" role=\"img\" aria-label=\"\(HTML.escape(label))\" xmlns=\"http://www.w3.org/2000/svg\">"
    }

    private static func truncate(_ text: String) -> String {
        text.count > 22 ? String(text.prefix(21)) + "…" : text
    }

    private static func dayFormatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "MMM d"
        return formatter
    }
}
