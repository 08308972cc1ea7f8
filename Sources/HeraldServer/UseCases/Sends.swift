import Foundation
import HeraldCore
import HeraldSending
import HeraldStore

/// Sends as a caller asks for them — `POST /api/send`, and the Live Activity starts, updates and ends of the API and
/// the console — composed with their one access check, so that no door can compose a send without it
/// (docs/security.md, "Keys scoped to apps").
struct Sends: Sendable {
    let apps: AppDirectory
    let clock: any WallClock

    /// The send `request` asks for, composed for `caller`.
    /// - Parameter sendID: The send's id; `nil`: a new one.
    /// - Throws: ``APIError``: what composing refuses (`400`, naming only the caller's apps); `403 insufficientScope`
    ///   for `"frequencyCap": false` without the `admin` scope (caps any sender could waive would be advisory);
    ///   `403 appNotAllowed` for an app the caller is not for; `403 environmentNotAllowed` for a key of one
    ///   environment sending to the other, or to both.
    func plan(_ request: SendRequest, for caller: KeyAccess, sendID: SendID? = nil) throws(APIError) -> SendPlan {
        let now = clock.now()
        let plan = try SendPlan(
            request, apps: apps, seenBy: caller.topics, sendID: sendID ?? SendID(at: now), at: now)
        if !request.frequencyCap, let key = caller.key, !key.allows(.admin) {
            throw APIKeyAuthenticator.insufficientScope(key, .admin)
        }
        try caller.check(app: plan.bundleID)
        try caller.check(environment: plan.query.environment)
        return plan
    }
}
