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
    func fragment(_ template: String, _ view: some ConsoleView) -> String {
        library.render(view, withTemplate: template) ?? ""
    }

    /// A whole page.
    /// - Parameters:
    ///   - template: The page's template.
    ///   - title: The page title.
    ///   - section: The navigation entry to mark current.
    ///   - view: The template's values; `{{csrf}}` is the session's CSRF token wherever the view has none.
    ///   - scripts: Script files of `/console/assets/` the page loads.
    func page(
        _ template: String, title: String, section: Section?, view: some ConsoleView, context: ServerRequestContext,
        scripts: [String] = [], status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]
    ) -> Response {
        let session = context.consoleSession
        let content = fragment(template, PageScope(view: view, csrf: session?.csrfToken))
        let role = session.map(ConsoleRole.init) ?? .viewer
        let scoped = session?.apiKey.map { $0.isScoped || $0.environment != nil } ?? false
        let nav = Section.allCases.filter {
            ($0 != .emulator || hasEmulator) && role >= $0.role && !(scoped && [.emulator, .keys].contains($0))
        }.map {
            NavigationEntry(href: $0.path, label: $0.rawValue, current: $0 == section)
        }
        let layout = Layout(
            title: title, content: content, signedIn: session != nil, csrf: session?.csrfToken ?? "", nav: nav,
            scripts: ["confirm.js"] + scripts)
        var headers = headers
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(
            status: status, headers: headers,
            body: .init(byteBuffer: ByteBuffer(string: library.render(layout, withTemplate: "layout") ?? "")))
    }

    /// layout.mustache's values.
    private struct Layout: ConsoleView {
        let title: String
        /// The page's own markup, rendered already.
        let content: String
        let signedIn: Bool
        let csrf: String
        let nav: [NavigationEntry]
        let scripts: [String]
    }

    private struct NavigationEntry {
        let href: String
        let label: String
        let current: Bool
    }

    /// A page's view with the session's CSRF token beside it, so every form of a page finds `{{csrf}}`.
    private struct PageScope<View: ConsoleView>: ConsoleView, MustacheParent {
        let view: View
        let csrf: String?

        func child(named name: String) -> Any? {
            if name == "csrf", let csrf { return csrf }
            return ConsoleViewValues.child(named: name, of: view)
        }
    }

    /// A page saying what went wrong and what to do.
    func errorPage(status: HTTPResponse.Status, message: String, context: ServerRequestContext) -> Response {
        page(
            "error", title: status.reasonPhrase, section: nil,
            view: ErrorView(heading: "\(status.code) \(status.reasonPhrase)", message: message), context: context,
            status: status)
    }

    /// error.mustache's values.
    private struct ErrorView: ConsoleView {
        let heading: String
        let message: String
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

/// The values a console template renders: a struct whose stored properties are named as the template's keys.
///
/// Mustache reads a struct's properties by reflection, as it reads a dictionary's keys: a `nil` optional is missing
/// (a section of it renders nothing, a lookup goes on to the enclosing values), `false` and an empty array render a
/// section not at all, and anything else is shown by its description.
protocol ConsoleView {}

/// A view that shows other values as its own (a send's progress on the list of sends and on a send's page): a key
/// its own properties lack is looked up in ``parts``, so templates read them without a section of their own.
protocol ComposedView: MustacheParent {
    /// The values shown too, looked up in order after the view's own properties.
    var parts: [Any] { get }
}

extension ComposedView {
    func child(named name: String) -> Any? {
        if let own = ConsoleViewValues.property(named: name, of: self) { return own }
        for part in parts {
            if let value = ConsoleViewValues.child(named: name, of: part) { return value }
        }
        return nil
    }
}

enum ConsoleViewValues {
    /// A view's value for a template key, as Mustache would find it: an optional's wrapped value, `nil` when missing.
    static func child(named name: String, of view: Any) -> Any? {
        if let parent = view as? any MustacheParent { return parent.child(named: name) }
        return property(named: name, of: view)
    }

    /// The stored property of that name, unwrapped; `nil` when missing or `nil`.
    static func property(named name: String, of view: Any) -> Any? {
        guard let value = Mirror(reflecting: view).children.first(where: { $0.label == name })?.value else {
            return nil
        }
        let optional = Mirror(reflecting: value)
        guard optional.displayStyle == .optional else { return value }
        return optional.children.first?.value
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
