import HTTPTypes
import HeraldCore
import HeraldStore

/// What the request's API key (or the console session's) may see and act on: its apps and its environment
/// (docs/security.md, "Keys scoped to apps").
///
/// Two answers for a key outside its apps, chosen by what the caller already knows:
/// - A request that names the app (a `topic` in its body or query, or the only app of the server) gets
///   `403 appNotAllowed` naming it: the caller said the app, so saying it back leaks nothing.
/// - A request for a resource by its id alone (a send, a channel, a device token) gets the same `404` as a resource
///   that does not exist: a `403` would tell the key that the id exists in another app.
struct KeyAccess: Sendable {
    /// `nil`: a request no key authenticated (open routes), which these checks do not limit.
    let key: APIKey?

    /// The apps the key is limited to; `nil`: every app.
    var topics: Set<String>? {
        guard let key, key.isScoped else { return nil }
        return key.apps
    }

    /// The one environment the key acts in; `nil`: both.
    var environment: APNSEnvironment? { key?.environment }

    /// Whether the key sees a resource of this app (`nil`: a record from before records knew their app, which
    /// only keys without apps see).
    func sees(app topic: String?) -> Bool {
        guard let topics else { return true }
        guard let topic else { return false }
        return topics.contains(topic)
    }

    /// Whether the key sees a resource of this environment.
    func sees(environment: APNSEnvironment) -> Bool { key?.allows(environment: environment) ?? true }

    /// Refuses an app the request named that the key is not for.
    /// - Throws: ``APIError`` `403 appNotAllowed`.
    func check(app topic: String) throws(APIError) {
        guard let key, !sees(app: topic) else { return }
        throw APIError(
            .forbidden, reason: "appNotAllowed",
            "The API key \(key.name) is for \(key.apps.sorted().joined(separator: ", ")), not \(topic): use a key made for \(topic) (herald keys create NAME --app \(topic))."
        )
    }

    /// Refuses a request that acts in another environment than the key's, or in both when the key has one.
    /// - Parameter environment: The environment the request acts in; `nil`: both.
    /// - Throws: ``APIError`` `403 environmentNotAllowed`.
    func check(environment: APNSEnvironment?) throws(APIError) {
        guard let key, let allowed = key.environment, environment != allowed else { return }
        let asked = environment.map { "in \($0.name)" } ?? "in both environments"
        throw APIError(
            .forbidden, reason: "environmentNotAllowed",
            "The API key \(key.name) acts in \(allowed.name) only, and this request acts \(asked): say \"environment\": \"\(allowed.name)\", or use a key without an environment."
        )
    }

    /// Refuses a request that only a key without apps may make (key management: a scoped key must not make a key
    /// that is not).
    /// - Throws: ``APIError`` `403 unscopedKeyRequired`.
    func requireUnscoped(_ what: String) throws(APIError) {
        guard let key, key.isScoped || key.environment != nil else { return }
        throw APIError(
            .forbidden, reason: "unscopedKeyRequired",
            "The API key \(key.name) is limited to some apps or an environment, and \(what) needs an admin key without limits."
        )
    }
}

extension ServerRequestContext {
    /// What the request's key may see and act on.
    var access: KeyAccess { KeyAccess(key: apiKey) }
}
