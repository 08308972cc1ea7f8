import Foundation
import HTTPTypes
import HeraldCore
import Testing

@testable import HeraldServer

/// A browser's part in console tests: a cookie jar over the router test client, forms posted URL-encoded, and the
/// session's CSRF token read from the page.
struct ConsoleClient: Sendable {
    let client: ServerClient
    var cookies: [String: String] = [:]
    var csrf = ""

    init(_ client: ServerClient) { self.client = client }

    /// The `name=value` pairs of an answer's `Set-Cookie` headers (a `Max-Age=0` one removes its cookie).
    static func setCookies(_ answer: ServerClient.Answer) -> [(name: String, value: String, attributes: String)] {
        answer.headers[values: .setCookie].map { header in
            let first = header.split(separator: ";", maxSplits: 1)
            let pair = first[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(pair[0]), pair.count > 1 ? String(pair[1]) : "", first.count > 1 ? String(first[1]) : "")
        }
    }

    var cookieHeader: String { cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }

    @discardableResult
    mutating func call(
        _ method: HTTPRequest.Method, _ uri: String, form: [(String, String)]? = nil, json: String? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> ServerClient.Answer {
        var headers = extra
        if !cookies.isEmpty { headers[.cookie] = cookieHeader }
        var body = json
        if let form {
            headers[.contentType] = "application/x-www-form-urlencoded"
            body = form.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        }
        let answer = try await client.call(method, uri, body: body, headers: headers)
        for cookie in Self.setCookies(answer) {
            if cookie.attributes.contains("Max-Age=0") { cookies[cookie.name] = nil } else { cookies[cookie.name] = cookie.value }
        }
        if let token = Self.between(answer.body, "<meta name=\"herald-csrf\" content=\"", "\"") { csrf = token }
        return answer
    }

    /// Signs in with a secret through the sign-in form; returns the form's answer.
    /// - Parameter followRedirect: Whether to view the overview the sign-in leads to, as a browser does; `false` leaves
    ///   the server's first view of it to the test.
    @discardableResult
    mutating func signIn(_ secret: String, headers: HTTPFields = [:], followRedirect: Bool = true) async throws
        -> ServerClient.Answer
    {
        let form = try await call(.get, "/console/sign-in", headers: headers)
        let token = try #require(Self.between(form.body, "id=\"sign-in-token\" name=\"_csrf\" value=\"", "\""))
        let answer = try await call(.post, "/console/sign-in", form: [("_csrf", token), ("key", secret)], headers: headers)
        if answer.status == .seeOther, followRedirect { try await call(.get, "/console") }
        return answer
    }

    /// What the compose page posts: the send API (or its dry run) with the session's cookie and CSRF token.
    mutating func send(_ body: String, dryRun: Bool = false) async throws -> ServerClient.Answer {
        try await call(
            .post, "/api/send" + (dryRun ? "?dryRun=true" : ""), json: body,
            headers: [HTTPField.Name("X-Herald-CSRF")!: csrf])
    }

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    static func between(_ text: String, _ start: String, _ end: String) -> String? {
        guard let from = text.range(of: start), let to = text[from.upperBound...].range(of: end) else { return nil }
        return String(text[from.upperBound..<to.lowerBound])
    }
}
