/// The kind of failure an error reports, for callers that branch on it: `error.code == .invalidKey`, or
/// `switch error.code { case .invalidKey: … }`.
///
/// Each error type names its codes once, as static members of `ErrorCode` constrained to that type:
///
/// ```swift
/// public struct StorageError: CodedError {
///     public typealias Code = ErrorCode<StorageError>
///     …
/// }
///
/// extension ErrorCode where Domain == StorageError {
///     /// The key is empty or has characters a file name cannot.
///     public static let invalidKey = Self("invalidKey")
/// }
/// ```
///
/// `Domain` is never stored: it only keeps the codes of different errors apart, so a `StorageError.Code` cannot be
/// compared with or passed as a `RegistrationError.Code`. Two codes of one domain are equal when their names are. The
/// set of codes is closed to clients of Herald (only Herald's own modules create codes), but new codes may be added.
public struct ErrorCode<Domain>: Sendable, Hashable, CustomStringConvertible {
    private let name: String

    /// A code named `name`; the name is what ``description`` shows, and conventionally the static member's name.
    package init(_ name: String) { self.name = name }

    /// The code's name, such as `invalidKey`.
    public var description: String { name }
}

/// An error that carries an ``ErrorCode`` to branch on and a message that says what went wrong and what to do.
///
/// `description` is the message unless the error type says otherwise.
public protocol CodedError: Error, Sendable, CustomStringConvertible {
    /// What failed.
    var code: ErrorCode<Self> { get }
    /// What went wrong and what to do, safe to show a person.
    var message: String { get }
}

extension CodedError {
    /// The message.
    public var description: String { message }
}
