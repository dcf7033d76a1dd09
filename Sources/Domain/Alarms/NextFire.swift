import Foundation

/// `next_fire_at`: the first instant an alarm fires strictly after a given instant
/// (docs/design.md#next-fire). Pure: the instant is passed in, never read from a clock.
///
/// Local days come from `Schedule.firstDate(onOrAfter:)`; each (day, time of day) pair is turned into an
/// instant in the alarm's zone by `instant(of:at:timezone:)`, whose DST rules are:
///
/// - **Gap** (spring forward; the wall time does not exist): the time is read with the offset in force
///   *before* the transition, which is the same as moving the clock forward by the gap's length.
///   New York 2026-03-08 02:30 (02:00→03:00 gap) fires at 03:30 EDT = 07:30Z; Lord Howe's 30-minute gap
///   moves 02:15 to 02:45; Apia's skipped 2011-12-30 moves that day's 09:00 to 2011-12-31 09:00 (+14).
///   A shifted time may coincide with a later time of the same or next day; equal instants fire once.
/// - **Overlap** (fall back; the wall time occurs twice): fires once, at the first (earlier) instant.
/// - Otherwise: the one instant whose local wall time it is.
///
/// Search bound: the walk starts two local days before the instant's local day (a zone's offset moves
/// by at most ~26 h, so no earlier day can fire after the instant) and stops once it has looked two days
/// past the first day yielding a fire after the instant (nothing later can be earlier). Each step is one
/// `firstDate` call, which is constant work, so a call inspects a handful of days; `maxDaysInspected`
/// caps it anyway.
public enum NextFire {
    /// Hard cap on the scheduled days one call inspects; in practice it looks at no more than about six.
    public static let maxDaysInspected = 32
    /// Instants after this (9999-12-31T23:59:59.999Z) have no next fire: it keeps every computation far
    /// from `Int64` overflow whatever instant a caller passes.
    public static let latestInstant: Int64 = 253_402_300_799_999

    /// The first fire strictly after `instantMilliseconds` (epoch ms), as epoch ms on a whole minute, or
    /// nil when the alarm never fires again (past `end_date`, a one-time alarm that has fired, an unknown
    /// zone or no times of day).
    public static func after(_ instantMilliseconds: Int64, timing: AlarmTiming) -> Int64? {
        guard instantMilliseconds <= latestInstant, !timing.timesOfDay.isEmpty,
            let zone = TimeZone(identifier: timing.timezone)
        else { return nil }
        let times = Set(timing.timesOfDay).sorted()
        // Nothing fires before start_date, so an earlier instant may start the walk days before it
        // (this also keeps far-past instants away from the zone lookup).
        let earliest = (timing.schedule.startDate.daysSinceEpoch - 4) * 86_400
        let seconds = max(floorDiv(instantMilliseconds, 1000), earliest)
        let localDay = floorDiv(seconds + offset(zone, seconds), 86_400)
        var from = LocalDate(daysSinceEpoch: localDay - 2)
        var best: Int64?
        var firstHitDay: Int64?
        for _ in 0..<maxDaysInspected {
            guard let day = timing.schedule.firstDate(onOrAfter: from) else { break }
            let dayNumber = day.daysSinceEpoch
            if let firstHitDay, dayNumber > firstHitDay + 2 { break }
            for time in times {
                let fire = instant(of: day, at: time, in: zone) * 1000
                guard fire > instantMilliseconds else { continue }
                if firstHitDay == nil { firstHitDay = dayNumber }
                if fire < best ?? .max { best = fire }
            }
            from = day.adding(days: 1)
        }
        return best
    }

    /// Epoch seconds at which wall time `time` on local `date` happens in the IANA zone `timezone`, by the
    /// gap and overlap rules in the type's documentation; nil for an unknown zone.
    public static func instant(of date: LocalDate, at time: TimeOfDay, timezone: String) -> Int64? {
        TimeZone(identifier: timezone).map { instant(of: date, at: time, in: $0) }
    }

    /// `instant(of:at:timezone:)` for a resolved zone. Assumes at most one offset change within a day
    /// either side of the wall time.
    static func instant(of date: LocalDate, at time: TimeOfDay, in zone: TimeZone) -> Int64 {
        let wall = date.daysSinceEpoch * 86_400 + Int64(time.secondsOfDay)  // wall time read as if UTC
        let before = offset(zone, wall - 86_400)
        let after = offset(zone, wall + 86_400)
        let early = wall - before
        if offset(zone, early) == before { return early }  // unique, or the first of an overlap
        let late = wall - after
        if offset(zone, late) == after { return late }
        return early  // gap: the offset before the transition = clock moved forward by the gap
    }

    /// The zone's UTC offset in seconds at epoch second `seconds`.
    static func offset(_ zone: TimeZone, _ seconds: Int64) -> Int64 {
        Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(seconds))))
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }
}
