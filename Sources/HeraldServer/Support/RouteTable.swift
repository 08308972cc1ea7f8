import HTTPTypes

/// The methods each route path takes, so a known path asked with another method answers `405` with `Allow`
/// instead of Hummingbird's `404`.
struct RouteTable: Sendable {
    private struct Entry: Sendable {
        let segments: [Substring]
        var methods: [String]
    }

    private var entries: [Entry] = []

    /// - Parameter routes: `METHOD /path/{parameter}` (or `:parameter`), as `Router.routes` lists them.
    init(_ routes: [(method: String, path: String)]) {
        for route in routes {
            let segments = Self.segments(route.path)
            if let index = entries.firstIndex(where: { $0.segments == segments }) {
                if !entries[index].methods.contains(route.method) { entries[index].methods.append(route.method) }
            } else {
                entries.append(Entry(segments: segments, methods: [route.method]))
            }
        }
    }

    /// The methods a request path takes, sorted; empty when no route has this path.
    func methods(forPath path: String) -> [String] {
        let requested = Self.segments(path)
        let matching = entries.filter { entry in
            entry.segments.count == requested.count
                && zip(entry.segments, requested).allSatisfy { pattern, part in
                    pattern == part || (Self.isParameter(pattern) && !part.isEmpty)
                }
        }
        return Set(matching.flatMap(\.methods)).sorted()
    }

    private static func segments(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    private static func isParameter(_ segment: Substring) -> Bool {
        segment.hasPrefix(":") || (segment.hasPrefix("{") && segment.hasSuffix("}"))
    }
}
