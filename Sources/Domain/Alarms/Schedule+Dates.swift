/// Which local days a schedule fires on, by interval arithmetic (no day-by-day walk).
extension Schedule {
    /// The first local day on or after `date` (and on or after `startDate`) that the schedule fires on,
    /// or nil when there is none (past `endDate`, or a one-time date already behind).
    ///
    /// Constant work per call: every rule fires at least once in each of its periods (a week in the
    /// rule's set, a month via clamping or "last", a year via clamping), so the answer lies in the
    /// period holding `date` or the next active one.
    /// Expects a schedule that passed `ScheduleRules.validate`; returns nil for rules it cannot
    /// evaluate (empty day lists, interval < 1).
    public func firstDate(onOrAfter date: LocalDate) -> LocalDate? {
        let from = max(date, startDate)
        let found: LocalDate?
        switch rule {
        case .weekly(let days, let interval):
            found = Self.weekly(from: from, start: startDate, days: days, interval: interval)
        case .monthlyDate(let days, let interval):
            found = Self.monthly(from: from, start: startDate, interval: interval) { year, month in
                let last = Int(CivilDate.daysInMonth(year: year, month: month))
                return days.map { min($0, last) }
            }
        case .monthlyRelative(let week, let weekday, let interval):
            guard (1...7).contains(weekday), [1, 2, 3, 4, 5, -1].contains(week) else { return nil }
            found = Self.monthly(from: from, start: startDate, interval: interval) { year, month in
                [Self.relativeDay(year: year, month: month, week: week, weekday: weekday)]
            }
        case .annual(let month, let day, let interval):
            found = Self.annual(from: from, start: startDate, month: month, day: day, interval: interval)
        case .customDays(let n):
            guard n >= 1 else { return nil }
            let offset = from.daysSinceEpoch - startDate.daysSinceEpoch
            let k = (offset + Int64(n) - 1) / Int64(n)  // offset ≥ 0: ceiling division
            found = startDate.adding(days: k * Int64(n))
        case .oneTime(let day):
            found = day >= from ? day : nil
        }
        guard let found, endDate.map({ found <= $0 }) ?? true else { return nil }
        return found
    }

    /// Day of month of the `week`-th (1…4; 5 or -1 = last) ISO `weekday` in the month.
    static func relativeDay(year: Int64, month: Int64, week: Int, weekday: Int) -> Int {
        if week == -1 || week == 5 {
            let last = CivilDate.daysInMonth(year: year, month: month)
            let lastWeekday = LocalDate.isoWeekday(ofDay: CivilDate.toDays(year: year, month: month, day: last))
            return Int(last) - (lastWeekday - weekday + 7) % 7
        }
        let firstWeekday = LocalDate.isoWeekday(ofDay: CivilDate.toDays(year: year, month: month, day: 1))
        return 1 + (weekday - firstWeekday + 7) % 7 + 7 * (week - 1)
    }

    /// Weekly rule: weeks are numbered from the Monday of `start`'s week; week k is active when
    /// k is a multiple of `interval`.
    private static func weekly(from: LocalDate, start: LocalDate, days: [Int], interval: Int) -> LocalDate? {
        let sorted = days.filter { (1...7).contains($0) }.sorted()
        guard let firstWeekday = sorted.first, interval >= 1 else { return nil }
        let anchorMonday = start.daysSinceEpoch - Int64(start.isoWeekday - 1)
        let offset = from.daysSinceEpoch - anchorMonday  // ≥ 0 because from ≥ start
        var week = offset / 7
        var weekdayFrom = Int(offset % 7) + 1
        let step = Int64(interval)
        if week % step != 0 {
            week = (week / step + 1) * step
            weekdayFrom = 1
        }
        if let weekday = sorted.first(where: { $0 >= weekdayFrom }) {
            return LocalDate(daysSinceEpoch: anchorMonday + week * 7 + Int64(weekday - 1))
        }
        return LocalDate(daysSinceEpoch: anchorMonday + (week + step) * 7 + Int64(firstWeekday - 1))
    }

    /// Monthly rules: months are numbered from `start`'s month; month k is active when k is a multiple
    /// of `interval`. `daysIn(year, month)` lists the days the rule fires on in that month.
    private static func monthly(
        from: LocalDate, start: LocalDate, interval: Int, daysIn: (Int64, Int64) -> [Int]
    ) -> LocalDate? {
        guard interval >= 1 else { return nil }
        let anchor = Int64(start.year) * 12 + Int64(start.month - 1)
        var index = Int64(from.year) * 12 + Int64(from.month - 1) - anchor  // ≥ 0
        var dayFrom = from.day
        let step = Int64(interval)
        if index % step != 0 {
            index = (index / step + 1) * step
            dayFrom = 1
        }
        for _ in 0..<2 {
            let absolute = anchor + index
            let year = absolute / 12
            let month = absolute % 12 + 1
            if let day = daysIn(year, month).filter({ $0 >= dayFrom }).min() {
                return LocalDate(year: Int(year), month: Int(month), day: day)
            }
            index += step
            dayFrom = 1
        }
        return nil  // only when the rule names no day at all
    }

    /// Annual rule: years are counted from `start`'s year; year k is active when k is a multiple of
    /// `interval`. A day the month lacks that year clamps to its last day.
    private static func annual(from: LocalDate, start: LocalDate, month: Int, day: Int, interval: Int) -> LocalDate? {
        guard interval >= 1, (1...12).contains(month), day >= 1 else { return nil }
        let step = interval
        var index = from.year - start.year  // ≥ 0
        if index % step != 0 { index = (index / step + 1) * step }
        for _ in 0..<2 {
            let year = start.year + index
            let last = Int(CivilDate.daysInMonth(year: Int64(year), month: Int64(month)))
            if let date = LocalDate(year: year, month: month, day: min(day, last)), date >= from { return date }
            index += step
        }
        return nil
    }
}
