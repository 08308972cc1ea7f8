/// The metadata keys of Herald's log lines, in one place and with one prefix; the server adds its HTTP ones.
///
/// A token appears only as ``HeraldCore/DeviceToken/redacted`` under ``tokenSuffix``; keys, JWTs, API key secrets,
/// registration keys and payload bodies never appear at all.
package enum LogKey {
    package static let tokenSuffix = "herald.token_suffix"
    package static let environment = "herald.environment"
    package static let topic = "herald.topic"
    package static let reason = "herald.reason"
    package static let sendID = "herald.send_id"
    package static let lane = "herald.lane"
    package static let shard = "herald.shard"
    package static let shardSize = "herald.shard_size"
    package static let count = "herald.count"
    package static let error = "herald.error"
    package static let worker = "herald.worker"
    package static let action = "herald.action"
    package static let seconds = "herald.seconds"
    package static let channelID = "herald.channel_id"
}
