/// The JSON form documented on `Schedule`. Errors are `DecodingError`s whose coding path names the
/// offending key (`schedule.type`, `schedule.days_of_week`, …) for the App's error envelope.
extension Schedule: Codable {
    enum CodingKeys: String, CodingKey {
        case type
        case daysOfWeek = "days_of_week"
        case daysOfMonth = "days_of_month"
        case dayOfMonth = "day_of_month"
        case weekOfMonth = "week_of_month"
        case dayOfWeek = "day_of_week"
        case month
        case interval
        case intervalDays = "interval_days"
        case date
        case startDate = "start_date"
        case endDate = "end_date"
    }

    /// Every `type` value decoding accepts, for error messages.
    static let types = ["weekly", "monthly_date", "monthly_relative", "annual", "custom_days", "one_time"]

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let type = try c.decode(String.self, forKey: .type)
        func interval() throws -> Int { try c.decodeIfPresent(Int.self, forKey: .interval) ?? 1 }
        let rule: Rule
        switch type {
        case "weekly":
            rule = .weekly(daysOfWeek: try c.decode([Int].self, forKey: .daysOfWeek), interval: try interval())
        case "monthly_date":
            let days: [Int]
            if let list = try c.decodeIfPresent([Int].self, forKey: .daysOfMonth) {
                days = list
            } else if let legacy = try c.decodeIfPresent(Int.self, forKey: .dayOfMonth) {
                days = [legacy]  // docs/design.md#schedules: legacy single `day_of_month`
            } else {
                throw DecodingError.keyNotFound(
                    CodingKeys.daysOfMonth,
                    .init(codingPath: c.codingPath, debugDescription: "days_of_month is required"))
            }
            rule = .monthlyDate(daysOfMonth: days, interval: try interval())
        case "monthly_relative":
            let week = try c.decode(Int.self, forKey: .weekOfMonth)
            rule = .monthlyRelative(
                weekOfMonth: week == 5 ? -1 : week, dayOfWeek: try c.decode(Int.self, forKey: .dayOfWeek),
                interval: try interval())
        case "annual":
            rule = .annual(
                month: try c.decode(Int.self, forKey: .month), dayOfMonth: try c.decode(Int.self, forKey: .dayOfMonth),
                interval: try interval())
        case "custom_days":
            rule = .customDays(intervalDays: try c.decode(Int.self, forKey: .intervalDays))
        case "one_time":
            rule = .oneTime(date: try c.decode(LocalDate.self, forKey: .date))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: c,
                debugDescription: "unknown schedule type; expected one of \(Self.types.joined(separator: ", "))")
        }
        let start: LocalDate
        if case .oneTime(let date) = rule {
            start = try c.decodeIfPresent(LocalDate.self, forKey: .startDate) ?? date
        } else {
            start = try c.decode(LocalDate.self, forKey: .startDate)
        }
        self.init(rule, startDate: start, endDate: try c.decodeIfPresent(LocalDate.self, forKey: .endDate))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(rule.type, forKey: .type)
        switch rule {
        case .weekly(let days, let interval):
            try c.encode(days, forKey: .daysOfWeek)
            try c.encode(interval, forKey: .interval)
        case .monthlyDate(let days, let interval):
            try c.encode(days, forKey: .daysOfMonth)
            try c.encode(interval, forKey: .interval)
        case .monthlyRelative(let week, let weekday, let interval):
            try c.encode(week, forKey: .weekOfMonth)
            try c.encode(weekday, forKey: .dayOfWeek)
            try c.encode(interval, forKey: .interval)
        case .annual(let month, let day, let interval):
            try c.encode(month, forKey: .month)
            try c.encode(day, forKey: .dayOfMonth)
            try c.encode(interval, forKey: .interval)
        case .customDays(let days):
            try c.encode(days, forKey: .intervalDays)
        case .oneTime(let date):
            try c.encode(date, forKey: .date)
        }
        try c.encode(startDate, forKey: .startDate)
        try c.encode(endDate, forKey: .endDate)  // explicit null: the field always exists
    }
}
