package import HeraldCore

extension DeviceQuery {
    /// The token of a query of exactly one explicit token: the shape of an inline send to one device. A backend may
    /// read that device by its key, a statement it prepares once, and apply the filters with ``passesFilters(_:)``.
    package var singleToken: DeviceToken? {
        // A preference rule needs the subject's choices, a cap estimate its counters, and a filter of own quiet hours
        // the person's window, which only the statement reads.
        guard preference == nil, exhaustedCaps == nil, !groupsByOwnQuietHours || timeZones == nil,
            case .tokens(let tokens) = selector, let first = tokens.first, tokens.allSatisfy({ $0 == first })
        else {
            return nil
        }
        return first
    }

    /// Whether a registration passes the query's filters (not its selector): the conditions of
    /// ``pageStatement(after:limit:dialect:)``, evaluated in memory.
    package func passesFilters(_ device: DeviceRegistration) -> Bool {
        if let topic, device.topic != topic { return false }
        if let environment, device.environment != environment { return false }
        if let tokenKinds, !tokenKinds.contains(device.tokenKind) { return false }
        if let activityType, device.activityType != activityType { return false }
        if skipsActivitiesDisabled, device.activitiesEnabled == false { return false }
        if let timeZones {
            let passes = device.timeZone.map(timeZones.zones.contains) ?? timeZones.includesUnset
            if !passes { return false }
        }
        if let registeredThrough,
            StoreTime.microseconds(device.createdAt) > StoreTime.microseconds(registeredThrough)
        {
            return false
        }
        if let lowerBound, !isPast(lowerBound, device) { return false }
        if let upperBound, isPast(upperBound, device) { return false }
        return includesInvalidated || device.isActive
    }

    /// Whether a registration comes after a position in the query's order.
    package func isPast(_ cursor: DeviceCursor, _ device: DeviceRegistration) -> Bool {
        if ordersByEnvironment, device.environment != cursor.environment {
            return device.environment.name > cursor.environment.name
        }
        return device.token > cursor.token
    }

    /// The page ``pageStatement(after:limit:dialect:)`` would give for a ``singleToken`` query, from the device read
    /// by its key (`nil` when there is none).
    package func singleTokenPage(_ device: DeviceRegistration?, after cursor: DeviceCursor?) -> DevicePage {
        guard let device, cursor.map({ device.token > $0.token }) ?? true, passesFilters(device) else {
            return DevicePage(devices: [], next: nil)
        }
        return DevicePage(devices: [device], next: nil)
    }
}
