/// One page of registrations, in the store's stable order.
public struct DevicePage: Sendable, Hashable {
    /// The registrations, at most the requested limit.
    public var devices: [DeviceRegistration]
    /// Where the next page starts, or `nil` when this is the last page.
    public var next: DeviceCursor?

    public init(devices: [DeviceRegistration], next: DeviceCursor?) {
        self.devices = devices
        self.next = next
    }
}
