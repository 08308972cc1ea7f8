/// The metadata keys of the server's log lines, in one place and with one prefix.
///
/// A token appears only as ``HeraldCore/DeviceToken/redacted`` under ``tokenSuffix``; keys, JWTs, API key secrets,
/// registration keys and payload bodies never appear at all.
enum LogKey {
    static let tokenSuffix = "herald.token_suffix"
    static let environment = "herald.environment"
    static let topic = "herald.topic"
    static let reason = "herald.reason"
    static let sendID = "herald.send_id"
    static let lane = "herald.lane"
    static let shard = "herald.shard"
    static let shardSize = "herald.shard_size"
    static let count = "herald.count"
    static let error = "herald.error"
    static let path = "herald.path"
    static let apiKey = "herald.api_key"
    static let worker = "herald.worker"
    static let action = "herald.action"
    static let channelID = "herald.channel_id"
}
