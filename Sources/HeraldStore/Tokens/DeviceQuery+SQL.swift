import HeraldCore

extension DeviceQuery {
    /// The columns of `devices` every backend selects, in the order backends decode them.
    package static let columns = """
        d.token, d.topic, d.environment, d.token_kind, d.user_id, d.installation_id, d.preferred_languages, \
        d.app_version, d.platform, d.tags, d.registered_at, d.created_at, d.updated_at, d.invalidated_at, \
        d.invalidation_reason, d.apns_timestamp, d.time_zone, d.activity_type, d.activity_id, d.stale_at, \
        d.activities_enabled, d.frequent_pushes_enabled, d.push_endpoint, d.push_p256dh, d.push_auth
        """

    /// A device row's ``PreferenceSubject/key``: its user, else its installation, else its token.
    package static let preferenceSubjectKey = "COALESCE('u:' || d.user_id, 'i:' || d.installation_id, 't:' || d.token)"

    /// A device row's person's own quiet hours (``OwnQuietHours``'s text; NULL: the app's window): one primary-key
    /// probe of `preference_quiet_hours`.
    package static let ownQuietHoursColumn =
        "(SELECT q.quiet_hours FROM preference_quiet_hours q WHERE q.topic = d.topic AND q.subject = "
        + preferenceSubjectKey + ")"

    /// A device row's group for a query that ``groupsByOwnQuietHours``: ``ZoneWithOwnQuietHours/key``, or the zone
    /// and `|` alone for people without their own quiet hours.
    private static let zoneWithOwnQuietHoursKey =
        "COALESCE(d.time_zone, '') || '|' || COALESCE(" + ownQuietHoursColumn + ", '')"

    /// The most explicit tokens one statement binds; longer lists are walked in chunks.
    package static let tokenChunk = 1_000

    /// A page of the query as one statement, plus what the backend needs to finish the page.
    package struct PageStatement: Sendable {
        /// `nil` when the page is known to be empty without asking the database.
        package var statement: SQLStatement?
        /// The statement asks for one row more than the page holds, to know whether another page follows.
        package var limit: Int
        /// For explicit token lists: the cursor of the next chunk, when tokens remain after this one.
        package var nextChunk: DeviceCursor?
    }

    /// The statement for one page: keyset pagination on `(environment, token)` or `token`, over an index.
    package func pageStatement(after cursor: DeviceCursor?, limit: Int, dialect: SQLStatement.Dialect)
        -> PageStatement
    {
        let limit = max(1, limit)
        var statement = SQLStatement(dialect)
        var nextChunk: DeviceCursor?
        let key = selectorIsTag ? "t.token" : "d.token"
        var conditions: [String]
        switch selector {
        case .tokens(let tokens):
            conditions = filters(into: &statement)
            let remaining = Set(tokens).filter { cursor == nil || $0 > cursor!.token }.sorted()
            if remaining.isEmpty { return PageStatement(statement: nil, limit: limit, nextChunk: nil) }
            let chunk = remaining.prefix(Swift.min(limit, Self.tokenChunk))
            if chunk.count < remaining.count {
                nextChunk = DeviceCursor(environment: .development, token: chunk.last!)
            }
            conditions.append("d.token IN (\(statement.bindList(chunk.map(\.hex))))")
        default:
            conditions = continuing(after: cursor).filters(into: &statement)
        }
        let order = ordersByEnvironment ? "d.environment, d.token" : key
        statement.sql =
            "SELECT \(Self.columns) FROM devices d\(join(&statement)) WHERE "
            + conditions.joined(separator: " AND ")
            + " ORDER BY \(order) LIMIT \(statement.bind(.integer(Int64(limit + 1))))"
        return PageStatement(statement: statement, limit: limit, nextChunk: nextChunk)
    }

    /// The position of the `count`-th device after a cursor, in the order pages walk (`environment`, `token` columns),
    /// and of the device after it: where a shard of `count` devices ends, when another shard follows (two rows). Fewer
    /// rows: the rest fits in one shard. Counts the target before the rules about the person (see
    /// ``filters(into:personRules:)``), so a shard holds at most `count` matches; reads the index's keys and each
    /// device's own columns only.
    package func boundaryStatement(after cursor: DeviceCursor?, count: Int, dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        var statement = SQLStatement(dialect)
        let key = selectorIsTag ? "t.token" : "d.token"
        let conditions = continuing(after: cursor).filters(into: &statement, personRules: false)
        let order = ordersByEnvironment ? "d.environment, d.token" : key
        statement.sql =
            "SELECT d.environment, \(key) FROM devices d\(join(&statement)) WHERE "
            + conditions.joined(separator: " AND ")
            + " ORDER BY \(order) LIMIT 2 OFFSET \(statement.bind(.integer(Int64(Swift.max(count, 1) - 1))))"
        return statement
    }

    /// The page of rows a statement returned (at most one more than the limit).
    package func page(of rows: [DeviceRegistration], for statement: PageStatement) -> DevicePage {
        guard rows.count > statement.limit else { return DevicePage(devices: rows, next: statement.nextChunk) }
        let devices = Array(rows.prefix(statement.limit))
        let last = devices[devices.count - 1]
        return DevicePage(devices: devices, next: DeviceCursor(environment: last.environment, token: last.token))
    }

    /// The statements whose counts add up to the number of matches (several for a long token list).
    package func countStatements(dialect: SQLStatement.Dialect) -> [SQLStatement] {
        aggregateStatements("count(*)", dialect: dialect)
    }

    /// The statements whose rows together are the distinct time zones of the matches (`NULL` for none).
    package func timeZoneStatements(dialect: SQLStatement.Dialect) -> [SQLStatement] {
        aggregateStatements(
            groupsByOwnQuietHours ? "DISTINCT d.time_zone, " + Self.ownQuietHoursColumn : "DISTINCT d.time_zone",
            dialect: dialect)
    }

    /// One statement selecting `columns` over the matches, or one per chunk of a long token list.
    private func aggregateStatements(_ columns: String, dialect: SQLStatement.Dialect) -> [SQLStatement] {
        var chunks: [[DeviceToken]?] = [nil]
        if case .tokens(let tokens) = selector {
            let unique = Array(Set(tokens))
            chunks = stride(from: 0, to: unique.count, by: Self.tokenChunk).map {
                Array(unique[$0..<Swift.min($0 + Self.tokenChunk, unique.count)])
            }
        }
        return chunks.map { chunk in
            var statement = SQLStatement(dialect)
            var conditions = filters(into: &statement)
            if let chunk { conditions.append("d.token IN (\(statement.bindList(chunk.map(\.hex))))") }
            statement.sql =
                "SELECT \(columns) FROM devices d\(join(&statement)) WHERE "
                + conditions.joined(separator: " AND ")
            return statement
        }
    }

    /// The query from after `cursor` on: the cursor becomes its lower bound (the later of the two), so its range has one
    /// start. Beside a range said in plain columns (``shardRange(into:)``) a cursor would be a second lower bound that
    /// PostgreSQL cannot compare with the first: it started the index scan at the range's start and skipped to the
    /// cursor, 55 ms a page against 2.6 ms deep into a million devices.
    private func continuing(after cursor: DeviceCursor?) -> DeviceQuery {
        guard let cursor else { return self }
        if let lowerBound, walkPlace(of: lowerBound) > walkPlace(of: cursor) { return self }
        return after(cursor)
    }

    /// A position's place in the walk's order: by environment (development first) then token, or by token alone.
    private func walkPlace(of cursor: DeviceCursor) -> (Int, String) {
        (ordersByEnvironment ? APNSEnvironment.all.firstIndex(of: cursor.environment) ?? 0 : 0, cursor.token.hex)
    }

    /// A condition comparing a row's place in the walk's order with a cursor's: `(environment, token)` or `token`.
    private func position(_ comparison: String, _ cursor: DeviceCursor, into statement: inout SQLStatement) -> String {
        if ordersByEnvironment {
            let environment = statement.bind(cursor.environment.name)
            return "(d.environment, d.token) \(comparison) (\(environment), \(statement.bind(cursor.token.hex)))"
        }
        return "\(selectorIsTag ? "t.token" : "d.token") \(comparison) \(statement.bind(cursor.token.hex))"
    }

    /// A shard's range (``lowerBound`` exclusive, ``upperBound`` inclusive). In the `(environment, token)` order a range
    /// inside one environment — every shard but the one where development ends — is that environment and a range of
    /// tokens: PostgreSQL estimates a row comparison's rows from its first column alone (half the devices), and then
    /// plans a shard's statements as a scan of the whole table, so such a range is said with plain columns.
    private func shardRange(into statement: inout SQLStatement) -> [String] {
        let from = lowerBound?.environment ?? APNSEnvironment.all[0]
        let through = upperBound?.environment ?? APNSEnvironment.all[APNSEnvironment.all.count - 1]
        guard ordersByEnvironment, from == through else {
            var conditions: [String] = []
            if let lowerBound { conditions.append(position(">", lowerBound, into: &statement)) }
            if let upperBound { conditions.append(position("<=", upperBound, into: &statement)) }
            return conditions
        }
        var conditions = ["d.environment = \(statement.bind(from.name))"]
        if let lowerBound { conditions.append("d.token > \(statement.bind(lowerBound.token.hex))") }
        if let upperBound { conditions.append("d.token <= \(statement.bind(upperBound.token.hex))") }
        return conditions
    }

    private var selectorIsTag: Bool {
        if case .tag = selector { return true }
        return false
    }

    private func join(_ statement: inout SQLStatement) -> String {
        guard case .tag(let tag) = selector else { return "" }
        return " JOIN device_tags t ON t.token = d.token AND t.tag = \(statement.bind(tag))"
    }

    /// The conditions shared by pages and counts. Binds in the order the SQL text uses them, except the tag of the
    /// join, which numbered placeholders make order-independent.
    /// - Parameter personRules: `false` leaves out the rules about the person: the preference and frequency cap
    ///   probes, and the person's own quiet hours (only the device's zone is compared). Those probe other tables for
    ///   each device, which a shard boundary (an offset of 10,000 devices) cannot afford; without them the conditions
    ///   hold for every match and for some devices the rules remove.
    private func filters(into statement: inout SQLStatement, personRules: Bool = true) -> [String] {
        var conditions: [String] = []
        if case .user(let user) = selector { conditions.append("d.user_id = \(statement.bind(user))") }
        if case .activity(let id) = selector { conditions.append("d.activity_id = \(statement.bind(id))") }
        if let topic { conditions.append("d.topic = \(statement.bind(topic))") }
        if let environment { conditions.append("d.environment = \(statement.bind(environment.name))") }
        if let kinds = sortedKindNames {
            conditions.append(kinds.isEmpty ? "1 = 0" : "d.token_kind IN (\(statement.bindList(kinds)))")
        }
        if let activityType { conditions.append("d.activity_type = \(statement.bind(activityType))") }
        if skipsActivitiesDisabled { conditions.append("(d.activities_enabled IS NULL OR d.activities_enabled <> 'no')") }
        conditions += shardRange(into: &statement)
        if let registeredThrough {
            conditions.append("d.created_at <= \(statement.bind(.integer(StoreTime.microseconds(registeredThrough))))")
        }
        if let timeZones, groupsByOwnQuietHours, personRules {
            // One key per device, its zone and its person's window, against the groups the filter holds.
            let keys =
                timeZones.zones.map { $0 + "|" } + (timeZones.includesUnset ? ["|"] : [])
                + timeZones.ownQuietHours.map(\.key)
            conditions.append(
                keys.isEmpty ? "1 = 0" : Self.zoneWithOwnQuietHoursKey + " IN (\(statement.bindList(keys.sorted())))")
        } else if let timeZones {
            // Without the person's own quiet hours, a (zone, own window) group holds every device of its zone.
            let zones = timeZones.zones.union(timeZones.ownQuietHours.compactMap(\.zone))
            var alternatives: [String] = []
            if !zones.isEmpty { alternatives.append("d.time_zone IN (\(statement.bindList(zones.sorted())))") }
            if timeZones.includesUnset || timeZones.ownQuietHours.contains(where: { $0.zone == nil }) {
                alternatives.append("d.time_zone IS NULL")
            }
            conditions.append(alternatives.isEmpty ? "1 = 0" : "(" + alternatives.joined(separator: " OR ") + ")")
        }
        // A stale push-to-start token is left out as an invalidated one is (the column is NULL for every other kind).
        if !includesInvalidated { conditions.append("d.invalidated_at IS NULL AND d.stale_at IS NULL") }
        if let preference, personRules {
            // One primary-key probe per device, in the same statement: no lookup per device from Swift.
            let choice = preference.enabledByDefault ? 0 : 1
            conditions.append(
                (preference.enabledByDefault ? "NOT EXISTS" : "EXISTS")
                    + " (SELECT 1 FROM preference_choices p WHERE p.topic = d.topic AND p.subject = "
                    + Self.preferenceSubjectKey + " AND p.category = \(statement.bind(preference.category))"
                    + " AND p.enabled = \(choice))")
        }
        if let exhaustedCaps, personRules {
            let windows = exhaustedCaps.map { window in
                let (cap, windowStart) = (window.cap, window.windowStart)
                return "(c.scope = \(statement.bind(cap.scope)) AND c.period_seconds = \(statement.bind(.integer(Int64(cap.periodSeconds))))"
                    + " AND c.window_start = \(statement.bind(.integer(windowStart)))"
                    + " AND c.count >= \(statement.bind(.integer(Int64(cap.limit)))))"
            }
            conditions.append(
                windows.isEmpty
                    ? "1 = 0"
                    : "EXISTS (SELECT 1 FROM frequency_counts c WHERE c.topic = d.topic AND c.subject = "
                        + Self.preferenceSubjectKey + " AND (" + windows.joined(separator: " OR ") + "))")
        }
        if conditions.isEmpty { conditions.append("1 = 1") }
        return conditions
    }
}
