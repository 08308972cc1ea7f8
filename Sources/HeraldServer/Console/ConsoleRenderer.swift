import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import Hummingbird
import Mustache

/// Renders the console's pages: a page template inside the layout, with the navigation of a signed-in session.
///
/// Mustache escapes every `{{value}}` for HTML; only markup the server made itself (charts, rendered partials) goes
/// through `{{{triple}}}` braces, and that markup escapes its own text (``HTML/escape(_:)``).
struct ConsoleRenderer: Sendable {
    private let library: MustacheLibrary
    /// Whether the emulator page is in the navigation.
    let hasEmulator: Bool

    init(hasEmulator: Bool) throws {
        var library = MustacheLibrary()
        for (name, text) in ConsoleAssets.templates { try library.register(text, named: name) }
        self.library = library
        self.hasEmulator = hasEmulator
    }

    /// The console's sections, in navigation order.
    enum Section: String, CaseIterable {
        case overview = "Overview"
        case compose = "Compose"
        case sends = "Sends"
        case devices = "Devices"
        case activities = "Live Activities"
        case keys = "API keys"
        case webhooks = "Webhooks"
        case audit = "Audit log"
        case emulator = "Emulator"

        var path: String {
            switch self {
            case .overview: "/console"
            case .compose: "/console/compose"
            case .sends: "/console/sends"
            case .devices: "/console/devices"
            case .activities: "/console/activities"
            case .keys: "/console/keys"
            case .webhooks: "/console/webhooks"
            case .audit: "/console/audit"
            case .emulator: "/console/emulator"
            }
        }

        /// The least role that sees the section.
        var role: ConsoleRole {
            switch self {
            case .compose: .operator
            case .keys, .audit, .webhooks: .admin
            default: .viewer
            }
        }
    }

    /// Renders a template to HTML without the layout: for parts of pages.
    func fragment(_ template: String, _ data: [String: Any]) -> String {
        library.render(data, withTemplate: template) ?? ""
    }

    /// A whole page.
    /// - Parameters:
    ///   - template: The page's template.
    ///   - title: The page title.
    ///   - section: The navigation entry to mark current.
    ///   - data: The template's values.
    ///   - scripts: Script files of `/console/assets/` the page loads.
    func page(
        _ template: String, title: String, section: Section?, data: [String: Any], context: ServerRequestContext,
        scripts: [String] = [], status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]
    ) -> Response {
        var data = data
        let session = context.consoleSession
        data["csrf"] = session?.csrfToken
        let content = fragment(template, data)
        let role = session.map(ConsoleRole.init) ?? .viewer
        let scoped = session?.apiKey.map { $0.isScoped || $0.environment != nil } ?? false
        let nav: [[String: Any]] = Section.allCases.filter {
            ($0 != .emulator || hasEmulator) && role >= $0.role && !(scoped && [.emulator, .keys].contains($0))
        }.map {
            ["href": $0.path, "label": $0.rawValue, "current": $0 == section]
        }
        let layout: [String: Any] = [
            "title": title, "content": content, "signedIn": session != nil, "csrf": session?.csrfToken ?? "",
            "nav": nav, "scripts": ["confirm.js"] + scripts,
        ]
        var headers = headers
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(
            status: status, headers: headers,
            body: .init(byteBuffer: ByteBuffer(string: library.render(layout, withTemplate: "layout") ?? "")))
    }

    /// A page saying what went wrong and what to do.
    func errorPage(status: HTTPResponse.Status, message: String, context: ServerRequestContext) -> Response {
        page(
            "error", title: status.reasonPhrase, section: nil,
            data: ["heading": "\(status.code) \(status.reasonPhrase)", "message": message], context: context,
            status: status)
    }

    /// A static file of the console (style sheet, script), or `nil`.
    func asset(_ name: String) -> Response? {
        guard let text = ConsoleAssets.files[name] else { return nil }
        let type =
            name.hasSuffix(".css")
            ? "text/css; charset=utf-8" : name.hasSuffix(".svg") ? "image/svg+xml" : "text/javascript; charset=utf-8"
        return Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "no-cache"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// Escaping for the markup the server writes itself (SVG charts).
enum HTML {
    /// The text with `&`, `<`, `>`, `"` and `'` replaced by character references.
    static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }
}
