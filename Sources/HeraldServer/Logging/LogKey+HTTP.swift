import HeraldSending

extension LogKey {
    /// The request's path.
    static let path = "herald.path"
    /// The name of the API key a request presented (never its secret).
    static let apiKey = "herald.api_key"
}
