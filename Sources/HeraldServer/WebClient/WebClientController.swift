import HTTPTypes
import Hummingbird

/// `GET /herald-web.js` and `GET /herald-sw.js`: the browser side of Web Push, served by Herald so that a site's pages
/// and service worker load the version that matches the server (docs/web-push.md, "From a page"). No API key: they
/// are public scripts.
struct WebClientController: Sendable {
    static let scripts: [String: String] = [
        "/herald-web.js": String(decoding: PackageResources.herald_web_js, as: UTF8.self),
        "/herald-sw.js": String(decoding: PackageResources.herald_sw_js, as: UTF8.self),
    ]

    func addRoutes(to router: Router<ServerRequestContext>) {
        for path in Self.scripts.keys.sorted() {
            router.get(RouterPath(path), use: script)
        }
    }

    @Sendable func script(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let text = Self.scripts[request.uri.path] else { throw HTTPError(.notFound) }
        var headers = HTTPFields()
        headers[.contentType] = "text/javascript; charset=utf-8"
        headers[.cacheControl] = "public, max-age=300"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
