import Foundation
import HeraldCore
import HeraldSending
import HeraldStore

/// Reads the version-1 jobs of sends an older server queued (their request body) for the engine's workers: parsed
/// and validated again as a request would be now, against this server's apps and the channel as it is.
struct RequestBodyJobs: LegacyJobReader {
    let apps: AppDirectory
    let store: any Store

    func job(fromRequestBody body: JSONValue, sendID: SendID, at now: Date) async throws(SendJobError) -> StoredJob {
        if let request = BroadcastPlan.storedRequest(body) {
            let channel: ChannelRecord?
            do {
                channel = try await store.channel(id: request.channelID)
            } catch {
                throw .noLongerValid("The channel \(request.channelID) cannot be read: \(error)", sendID: sendID)
            }
            guard let channel, channel.isLive else {
                throw .noLongerValid(BroadcastPlan.channelGone(request.channelID), sendID: sendID)
            }
            do {
                return .broadcast(
                    try BroadcastPlan(request.fields, channel: channel, sendID: sendID, at: now, resumed: true).job)
            } catch {
                throw .noLongerValid(error.message, sendID: sendID)
            }
        }
        do {
            return .send(try SendPlan(SendRequest(json: body), apps: apps, sendID: sendID, at: now, resumed: true).job)
        } catch {
            throw .noLongerValid(error.message, sendID: sendID)
        }
    }
}
