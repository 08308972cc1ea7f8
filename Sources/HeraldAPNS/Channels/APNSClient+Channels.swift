public import HeraldCore
import Logging
import NIOCore

/// Broadcast channels (iOS 18+ Live Activities, apns-protocol.md §1.4): channel management on
/// ``APNSClientConfiguration/channelManagementDestination`` and broadcasts on
/// ``APNSClientConfiguration/broadcastDestination``, each over its own pooled HTTP/2 connection with the client's
/// credentials, retry policy and timeouts. A channel id travels in the `apns-channel-id` header, never in the path.
///
/// Every operation sends an `apns-request-id` (the caller's, or a new UUID kept across retries) and returns the one
/// APNs echoes. Failures throw ``APNSChannelError``: `rejected` with APNs' status and reason (§5.5), `failed` when the
/// retry policy ran out without an answer, `invalidRequest` before anything is sent.
extension APNSClient {
    /// Creates a channel for an app in this client's environment. APNs picks the id; the storage policy cannot change.
    /// - Parameters:
    ///   - bundleID: the app's bare bundle id.
    ///   - storagePolicy: whether the newest message waits for offline devices.
    ///   - requestID: the `apns-request-id` to send; a new one when `nil`.
    /// - Throws: ``APNSChannelError``; `CannotCreateChannelConfig` when the app has 10,000 channels already.
    public func createChannel(
        bundleID: String, storagePolicy: APNSMessageStoragePolicy, requestID: APNSID? = nil
    ) async throws(APNSChannelError) -> APNSChannelReply<APNSChannel> {
        let body = JSONValue.object([
            "message-storage-policy": .integer(storagePolicy.rawValue), "push-type": .string("LiveActivity"),
        ]).jsonBytes
        let answer = try await channelRequest(
            "Creating a channel", .post, Self.channelsPath(bundleID), channel: nil, body: body, requestID: requestID)
        guard let text = answer.response.channelID, let id = APNSChannelID(text) else {
            throw APNSChannelError(
                .badResponse, "APNs created a channel but sent no apns-channel-id header: list the app's channels to find it.",
                requestID: answer.requestID, attempts: answer.attempts)
        }
        logger.info("Channel created", metadata: ["herald.channel_id": "\(id)", "herald.request_id": "\(answer.requestID)"])
        return APNSChannelReply(value: APNSChannel(id: id, storagePolicy: storagePolicy), requestID: answer.requestID, attempts: answer.attempts)
    }

    /// Reads a channel's storage policy.
    /// - Throws: ``APNSChannelError``; `ChannelNotRegistered` when no such channel exists in this environment.
    public func channel(
        _ id: APNSChannelID, bundleID: String, requestID: APNSID? = nil
    ) async throws(APNSChannelError) -> APNSChannelReply<APNSChannel> {
        let answer = try await channelRequest("Reading channel \(id)", .get, Self.channelsPath(bundleID), channel: id, requestID: requestID)
        guard let value = answer.json?["message-storage-policy"]?.intValue, let policy = APNSMessageStoragePolicy(rawValue: value) else {
            throw APNSChannelError(
                .badResponse, "APNs answered reading channel \(id) without a message-storage-policy of 0 or 1.",
                requestID: answer.requestID, attempts: answer.attempts)
        }
        return APNSChannelReply(value: APNSChannel(id: id, storagePolicy: policy), requestID: answer.requestID, attempts: answer.attempts)
    }

    /// Deletes a channel. Its id is never given out again; a message it already stored may still be delivered.
    /// - Throws: ``APNSChannelError``; `ChannelNotRegistered` when no such channel exists in this environment.
    @discardableResult
    public func deleteChannel(
        _ id: APNSChannelID, bundleID: String, requestID: APNSID? = nil
    ) async throws(APNSChannelError) -> APNSChannelReply<APNSChannelID> {
        let answer = try await channelRequest("Deleting channel \(id)", .delete, Self.channelsPath(bundleID), channel: id, requestID: requestID)
        logger.info("Channel deleted", metadata: ["herald.channel_id": "\(id)", "herald.request_id": "\(answer.requestID)"])
        return APNSChannelReply(value: id, requestID: answer.requestID, attempts: answer.attempts)
    }

    /// Lists the ids of every channel of an app in this client's environment.
    /// - Throws: ``APNSChannelError``.
    public func channels(bundleID: String, requestID: APNSID? = nil) async throws(APNSChannelError) -> APNSChannelReply<[APNSChannelID]> {
        let path = "/1/apps/\(bundleID)/all-channels"
        let answer = try await channelRequest("Listing the channels of \(bundleID)", .get, path, channel: nil, requestID: requestID)
        guard let list = answer.json?["channels"]?.arrayValue else {
            throw APNSChannelError(
                .badResponse, "APNs answered the channel list without a \"channels\" array.", requestID: answer.requestID, attempts: answer.attempts)
        }
        let ids = list.compactMap { $0.stringValue.flatMap(APNSChannelID.init) }
        return APNSChannelReply(value: ids, requestID: answer.requestID, attempts: answer.attempts)
    }

    /// Checks a broadcast and sends it to every device subscribed to `channel`.
    /// - Throws: ``APNSChannelError``: `invalidRequest` (nothing sent) when ``BroadcastNotification/prepare()`` finds a
    ///   mistake; `rejected` with APNs' reason, e.g. `BadExpirationDate` for an expiration on a channel that stores no
    ///   message.
    @discardableResult
    public func broadcast(_ notification: BroadcastNotification, to channel: APNSChannelID) async throws(APNSChannelError) -> APNSChannelReply<APNSChannelID> {
        let prepared: PreparedBroadcast
        do {
            prepared = try notification.prepare()
        } catch {
            throw APNSChannelError(.invalidRequest, "The broadcast would be refused: \(error)")
        }
        return try await broadcast(prepared, to: channel)
    }

    /// Sends a checked broadcast to every device subscribed to `channel`.
    /// - Throws: ``APNSChannelError``.
    @discardableResult
    public func broadcast(_ broadcast: PreparedBroadcast, to channel: APNSChannelID) async throws(APNSChannelError) -> APNSChannelReply<APNSChannelID> {
        var extra: [APNSHeaderTemplate.Field] = [.init("apns-push-type", APNSPushType.liveactivity.rawValue)]
        if let priority = broadcast.priority { extra.append(.init("apns-priority", String(priority.rawValue))) }
        if let expiration = broadcast.expiration {
            extra.append(.init("apns-expiration", String(expiration.secondsSince1970), indexable: expiration.secondsSince1970 == 0))
        }
        let answer = try await channelRequest(
            "Broadcasting on channel \(channel)", .post, "/4/broadcasts/apps/\(broadcast.bundleID)", channel: channel,
            extraHeaders: extra, body: broadcast.body, requestID: broadcast.requestID, pool: broadcastPool)
        return APNSChannelReply(value: channel, requestID: answer.requestID, attempts: answer.attempts)
    }

    // MARK: One request

    private static func channelsPath(_ bundleID: String) -> String { "/1/apps/\(bundleID)/channels" }

    /// A successful answer and what it took.
    private struct ChannelAnswer {
        let response: APNSResponse
        let requestID: String
        let attempts: Int

        /// The body as JSON, when it is JSON.
        var json: JSONValue? { response.body.flatMap { try? JSONValue(parsing: $0.readableBytesView) } }
    }

    /// Sends one request under the retry policy; returns the successful answer or throws why there is none.
    private func channelRequest(
        _ operation: String, _ method: APNSRequestTarget.Method, _ path: String, channel: APNSChannelID?,
        extraHeaders: [APNSHeaderTemplate.Field] = [], body: [UInt8] = [], requestID: APNSID?, pool: ConnectionPool? = nil
    ) async throws(APNSChannelError) -> ChannelAnswer {
        let pool = pool ?? channelManagementPool
        let destination = pool === broadcastPool ? configuration.broadcastDestination : configuration.channelManagementDestination
        let authority = Self.authority(of: destination)
        func template(_ token: ProviderToken?) -> APNSHeaderTemplate {
            var fields: [APNSHeaderTemplate.Field] = [.init(":authority", authority)]
            if let token { fields.append(.init("authorization", token.authorizationHeader)) }
            if let channel { fields.append(.init("apns-channel-id", channel.rawValue)) }
            return APNSHeaderTemplate(fields: fields + extraHeaders)
        }
        let id = requestID?.headerValue ?? ids.next()
        let answer = await retriedRequest(
            on: pool, template: template, target: .resource(method, path: path), requestID: id, body: ByteBuffer(bytes: body),
            expiration: nil)
        let (result, progress, history) = (answer.result, answer.progress, answer.history)
        switch answer.interruption {
        case .cancelled?:
            throw APNSChannelError(
                .cancelled,
                "\(operation) was cancelled while it waited to be sent again; APNs may or may not have acted on an earlier attempt.",
                requestID: id, attempts: progress.attempts)
        case .shuttingDown?:
            throw APNSChannelError(
                .failed,
                "\(operation) was not sent again: the server began to shut down while it waited to be retried; APNs may or may not have acted on an earlier attempt. Try again once a server runs.",
                requestID: id, attempts: progress.attempts)
        case .elapsed?, nil:
            break
        }
        switch result {
        case .success(let response) where (200...299).contains(response.status):
            return ChannelAnswer(response: response, requestID: response.requestID ?? id, attempts: progress.attempts)
        case .success(let response):
            let rejection = Self.rejection(from: response, apnsID: response.requestID ?? id)
            logger.notice("\(operation) was refused", metadata: [
                "herald.request_id": "\(rejection.apnsID)", "herald.reason": "\(rejection.reason)", "herald.status": "\(rejection.status)",
            ])
            throw APNSChannelError(
                .rejected, "\(operation) was refused: \(rejection.status) \(rejection.reason)\(history). \(rejection.reason.explanation)",
                rejection: rejection, requestID: rejection.apnsID, attempts: progress.attempts)
        case .failure(let error) where error.code == .cancelled:
            throw APNSChannelError(.cancelled, "\(operation): \(error.message)", requestID: id, attempts: progress.attempts)
        case .failure(let error):
            logger.warning("\(operation) got no answer", metadata: ["herald.request_id": "\(id)", "herald.error": "\(error)"])
            throw APNSChannelError(
                .failed, "\(operation) got no answer after \(progress.attempts) attempt\(progress.attempts == 1 ? "" : "s")\(history): \(error.message) Check that \(destination) is reachable.",
                requestID: id, attempts: progress.attempts)
        }
    }

    /// What ``retriedRequest(on:template:target:requestID:body:expiration:)`` ended with.
    struct RetriedAnswer {
        /// The last attempt's result.
        let result: Result<APNSResponse, APNSClientError>
        let progress: RetryProgress
        /// What the retries went through when the policy stopped them (" (Gave up after …)"), else empty.
        let history: String
        /// Set when a pause before a retry ended otherwise than elapsed: the last result is not the end.
        let interruption: RetryPause?
    }

    /// Sends one request under the retry policy, with the header template made again when the provider token is
    /// refreshed; returns the last attempt's result and what the retries went through. Channel management, broadcasts
    /// and Web Push share it.
    func retriedRequest(
        on pool: ConnectionPool, template: (ProviderToken?) -> APNSHeaderTemplate, target: APNSRequestTarget,
        requestID: String, body: ByteBuffer, expiration: APNSExpiration?
    ) async -> RetriedAnswer {
        var progress = RetryProgress(providerToken: configuration.credentials.tokenCache?.currentToken())
        var headers = template(progress.providerToken)
        while true {
            let result = await attempt(
                on: pool, template: headers, target: target, requestID: requestID, body: body, progress: &progress)
            switch judgeAttempt(result, &progress, expiration: expiration) {
            case .retry(let delay, let refreshed):
                if let refreshed { headers = template(refreshed) }
                let paused = await pause(delay)
                guard paused == .elapsed else {
                    return RetriedAnswer(result: result, progress: progress, history: "", interruption: paused)
                }
            case .gaveUp(let stop):
                return RetriedAnswer(
                    result: result, progress: progress, history: " (\(gaveUpSummary(stop, progress)))", interruption: nil)
            case .final:
                return RetriedAnswer(result: result, progress: progress, history: "", interruption: nil)
            }
        }
    }
}
