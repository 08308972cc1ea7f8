/// The metadata keys of Herald's log lines, in one place and with one prefix; the server adds its HTTP ones.
///
/// A token appears only as ``HeraldCore/DeviceToken/redacted`` under ``tokenSuffix``; keys, JWTs, API key secrets,
/// registration keys and payload bodies never appear at all.
public enum LogKey {
    public static let tokenSuffix = "herald.token_suffix"
    public static let environment = "herald.environment"
    public static let topic = "herald.topic"
    public static let reason = "herald.reason"
    public static let sendID = "herald.send_id"
    public static let lane = "herald.lane"
    public static let shard = "herald.shard"
    public static let shardSize = "herald.shard_size"
    public static let count = "herald.count"
    public static let error = "herald.error"
    public static let worker = "herald.worker"
    public static let action = "herald.action"
    public static let seconds = "herald.seconds"
    public static let channelID = "herald.channel_id"
}
