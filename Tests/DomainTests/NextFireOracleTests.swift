import Domain
import Foundation
import TestSupport
import Testing

/// Property test: `NextFire.after` against a brute-force oracle that shares none of the engine's
/// shortcuts. The oracle walks local days one at a time, matches each rule by its plain definition
/// (no interval jumps, no clamping arithmetic), and turns wall times into instants with its own table of
/// the zone's offset transitions (found by scanning `secondsFromGMT` and bisecting each change to the
/// second) instead of the engine's probe a day either side.
///
/// Half the schedules are fully random; the other half are built to fire on the day of one of the zone's
/// offset transitions (2009–2035) at wall times in or near the skipped or repeated hour, and the test
/// expects each DST zone to exercise more than 20 gaps and 20 overlaps.
///
/// Size: 2,000 seeded schedules per zone × 7 zones (New York, London, Lord Howe, Kathmandu, Apia,
/// Santiago, UTC) = 14,000 schedule–zone pairs; × 3 starting instants (near the start date, random within
/// three years, just before a transition) = 42,000 chains of up to 6 consecutive fires, each fed back in:
/// about 212,000 compared fires, of which about 6,000 fall in gaps and 5,800 in overlaps (printed per
/// zone). 4.5–10 s in a debug build on 2 shared cores (zones run in parallel).
@Suite("Next fire — brute-force oracle over random schedules and DST zones")
struct NextFireOracleTests {
    static let zones = [
        "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Apia",
        "America/Santiago", "UTC",
    ]
    static let schedulesPerZone = 2000
    static let fireChain = 6

    @Test("the engine agrees with the oracle", arguments: zones)
    func agreesWithOracle(zone: String) throws {
        let table = try #require(OffsetTable(zone: zone))
        var rng = SplitMix64(seed: 0x5EED_0004)  // same schedules in every zone
        var compared = 0
        var stats = Oracle.Stats()
        var failures = 0
        let clock = ContinuousClock()
        let started = clock.now
        let transitions = table.transitions(in: 1_230_768_000...2_051_222_400)  // 2009 … 2035
        for index in 0..<Self.schedulesPerZone {
            // Every other schedule is built to fire on the day of one of the zone's transitions, at
            // wall times in and around the skipped or repeated hour.
            let focus = index % 2 == 1 && !transitions.isEmpty ? transitions[rng.below(transitions.count)] : nil
            let timing =
                focus.map { RandomTiming.make(&rng, zone: zone, around: $0) } ?? RandomTiming.make(&rng, zone: zone)
            let startSeconds = timing.schedule.startDate.daysSinceEpoch * 86_400
            let starts = [
                startSeconds - 3 * 86_400 + Int64(rng.below(86_400)),
                startSeconds - 30 * 86_400 + Int64(rng.below(3 * 366 * 86_400)),
                (focus?.at ?? table.transition(after: startSeconds + Int64(rng.below(2 * 366 * 86_400))) ?? startSeconds)
                    - Int64(rng.below(3 * 86_400)),
            ]
            for startSecond in starts {
                let from = startSecond * 1000 + Int64(rng.below(1000))
                let expected = Oracle.fires(timing, after: from, count: Self.fireChain, table: table, stats: &stats)
                var actual: [Int64] = []
                var cursor = from
                while actual.count < Self.fireChain, let next = NextFire.after(cursor, timing: timing) {
                    actual.append(next)
                    cursor = next
                }
                compared += max(expected.count, 1)
                if actual != expected, failures < 5 {
                    failures += 1
                    Issue.record(
                        """
                        \(zone) \(timing.schedule) times \(timing.timesOfDay) after \(Timestamp.format(from))
                        engine \(actual.map(Timestamp.format))
                        oracle \(expected.map(Timestamp.format))
                        """)
                }
            }
        }
        print(
            "oracle \(zone): \(Self.schedulesPerZone) schedules × 3 starts × ≤\(Self.fireChain) fires = "
                + "\(compared) compared (\(stats.gaps) in gaps, \(stats.overlaps) in overlaps) in \(clock.now - started)"
        )
        if zone != "UTC", zone != "Asia/Kathmandu" {
            #expect(stats.gaps > 20 && stats.overlaps > 20, "too few DST cases exercised in \(zone)")
        }
    }
}

extension NextFireOracleTests {
    /// A zone's UTC offsets as a step function over 2000–2060, built by scanning and bisection.
    struct OffsetTable {
        /// `starts[i]` is the epoch second from which `offsets[i]` applies; ascending.
        private(set) var starts: [Int64] = []
        private(set) var offsets: [Int64] = []
        static let range: ClosedRange<Int64> = 946_684_800...2_840_140_800  // 2000-01-01 … 2060-01-01

        init?(zone name: String) {
            guard let zone = TimeZone(identifier: name) else { return nil }
            func offset(_ s: Int64) -> Int64 { Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(s)))) }
            var s = Self.range.lowerBound
            var current = offset(s)
            starts = [Int64.min]
            offsets = [current]
            let step: Int64 = 6 * 3600
            while s < Self.range.upperBound {
                let next = s + step
                let o = offset(next)
                if o != current {
                    var lo = s  // offset(lo) == current
                    var hi = next  // offset(hi) != current
                    while hi - lo > 1 {
                        let mid = (lo + hi) / 2
                        if offset(mid) == current { lo = mid } else { hi = mid }
                    }
                    starts.append(hi)
                    offsets.append(offset(hi))
                    current = offset(hi)
                }
                s = next
            }
        }

        /// Index of the segment holding epoch second `s`.
        func segment(_ s: Int64) -> Int {
            precondition(Self.range.contains(s), "oracle table covers 2000–2060 only")
            var lo = 0
            var hi = starts.count - 1
            while lo < hi {
                let mid = (lo + hi + 1) / 2
                if starts[mid] <= s { lo = mid } else { hi = mid - 1 }
            }
            return lo
        }

        func offset(at s: Int64) -> Int64 { offsets[segment(s)] }

        /// An offset change: at epoch second `at` the offset goes from `before` to `after`.
        struct Transition {
            var at: Int64
            var before: Int64
            var after: Int64
        }

        /// The transitions within `range` (epoch seconds).
        func transitions(in range: ClosedRange<Int64>) -> [Transition] {
            starts.indices.dropFirst().filter { range.contains(starts[$0]) }.map {
                Transition(at: starts[$0], before: offsets[$0 - 1], after: offsets[$0])
            }
        }

        /// First transition after epoch second `s`, if the table has one.
        func transition(after s: Int64) -> Int64? { starts.first { $0 > s } }

        /// How a wall time maps to instants.
        enum Mapping { case unique, overlap, gap }

        /// The instant of wall time `wall` (local seconds read as if UTC): the earliest segment whose offset
        /// maps it inside that segment; in a gap, the offset of the segment before the gap.
        func instant(wall: Int64) -> Int64 { resolve(wall: wall).instant }

        /// `instant(wall:)` and how the wall time mapped.
        func resolve(wall: Int64) -> (instant: Int64, mapping: Mapping) {
            let first = segment(wall - 30 * 3600)
            let last = segment(wall + 30 * 3600)
            var valid: [Int64] = []
            for i in first...last {
                let u = wall - offsets[i]
                let end = i + 1 < starts.count ? starts[i + 1] : Int64.max
                if u >= starts[i], u < end { valid.append(u) }
            }
            if let earliest = valid.min() { return (earliest, valid.count > 1 ? .overlap : .unique) }
            for i in (first + 1)...last where starts[i] + offsets[i - 1] <= wall && wall < starts[i] + offsets[i] {
                return (wall - offsets[i - 1], .gap)
            }
            preconditionFailure("wall time \(wall) is neither valid nor in a gap")
        }
    }

    /// The naive reference: one local day at a time, each rule by definition.
    enum Oracle {
        /// Coverage counters: fires the oracle produced from a wall time in a DST gap or overlap.
        struct Stats {
            var gaps = 0
            var overlaps = 0
        }

        /// The first `count` distinct fires strictly after `from` (epoch ms), ascending.
        static func fires(
            _ timing: AlarmTiming, after from: Int64, count: Int, table: OffsetTable, stats: inout Stats
        ) -> [Int64] {
            let schedule = timing.schedule
            let fromSecond = from >= 0 ? from / 1000 : (from - 999) / 1000
            let wall = fromSecond + table.offset(at: fromSecond)
            let localDay = wall >= 0 ? wall / 86_400 : (wall - 86_399) / 86_400
            var day = max(localDay - 3, schedule.startDate.daysSinceEpoch)
            var lastDay = min(
                schedule.endDate?.daysSinceEpoch ?? .max,
                (OffsetTable.range.upperBound - 2 * 86_400) / 86_400)
            if case .oneTime(let date) = schedule.rule { lastDay = min(lastDay, date.daysSinceEpoch) }
            var found: [Int64] = []
            var stopAfterDay = Int64.max
            while day <= lastDay, day <= stopAfterDay {
                if matches(schedule, day: day) {
                    for time in timing.timesOfDay {
                        let (second, mapping) = table.resolve(
                            wall: day * 86_400 + Int64(time.hour * 3600 + time.minute * 60))
                        let fire = second * 1000
                        if fire > from, !found.contains(fire) {
                            found.append(fire)
                            switch mapping {
                            case .unique: break
                            case .gap: stats.gaps += 1
                            case .overlap: stats.overlaps += 1
                            }
                        }
                    }
                    if found.count >= count, stopAfterDay == .max { stopAfterDay = day + 3 }
                }
                day += 1
            }
            return Array(found.sorted().prefix(count))
        }

        /// Whether the schedule fires on local day number `day`, straight from each rule's definition.
        static func matches(_ schedule: Schedule, day: Int64) -> Bool {
            let start = schedule.startDate.daysSinceEpoch
            guard day >= start else { return false }
            let date = LocalDate(daysSinceEpoch: day)
            let weekday = Int(((day - 4) % 7 + 7) % 7) + 1  // 1970-01-05 (day 4) was a Monday
            let isLastDayOfMonth = LocalDate(daysSinceEpoch: day + 1).month != date.month
            let monthsSinceStart = (date.year - schedule.startDate.year) * 12 + date.month - schedule.startDate.month
            switch schedule.rule {
            case .weekly(let days, let interval):
                let startMonday = start - Int64(((start - 4) % 7 + 7) % 7)
                let thisMonday = day - Int64(weekday - 1)
                return days.contains(weekday) && ((thisMonday - startMonday) / 7) % Int64(interval) == 0
            case .monthlyDate(let days, let interval):
                guard monthsSinceStart % interval == 0 else { return false }
                return days.contains(date.day) || (isLastDayOfMonth && days.contains { $0 > date.day })
            case .monthlyRelative(let week, let dayOfWeek, let interval):
                guard monthsSinceStart % interval == 0, weekday == dayOfWeek else { return false }
                if week == -1 || week == 5 { return LocalDate(daysSinceEpoch: day + 7).month != date.month }
                return (date.day - 1) / 7 + 1 == week
            case .annual(let month, let dayOfMonth, let interval):
                guard (date.year - schedule.startDate.year) % interval == 0, date.month == month else { return false }
                return date.day == dayOfMonth || (isLastDayOfMonth && dayOfMonth > date.day)
            case .customDays(let n):
                return (day - start) % Int64(n) == 0
            case .oneTime(let when):
                return date == when
            }
        }
    }

    /// Random valid timings, biased towards month ends and the small hours where DST transitions happen.
    enum RandomTiming {
        /// A timing whose rule certainly fires on the local day of `transition`, starting a few periods
        /// earlier, with most times of day inside or within 30 minutes of the skipped or repeated wall times.
        static func make(_ rng: inout SplitMix64, zone: String, around transition: OffsetTable.Transition)
            -> AlarmTiming
        {
            let lowWall = transition.at + min(transition.before, transition.after)
            let highWall = transition.at + max(transition.before, transition.after)
            let dayNumber = (lowWall >= 0 ? lowWall : lowWall - 86_399) / 86_400
            let day = LocalDate(daysSinceEpoch: dayNumber)
            let weekday = Int(((dayNumber - 4) % 7 + 7) % 7) + 1
            let periods = rng.below(3)
            let interval = 1 + rng.below(3)
            func monthsBack(_ months: Int) -> LocalDate {
                let index = day.year * 12 + day.month - 1 - months
                return LocalDate(year: index / 12, month: index % 12 + 1, day: 1)!
            }
            let rule: Schedule.Rule
            let start: LocalDate
            switch rng.below(6) {
            case 0:
                rule = .weekly(daysOfWeek: Array(Set([weekday, 1 + rng.below(7)])), interval: interval)
                start = day.adding(days: -Int64(7 * interval * periods))
            case 1:
                rule = .monthlyDate(daysOfMonth: Array(Set([day.day, 1 + rng.below(31)])), interval: interval)
                start = monthsBack(interval * periods)
            case 2:
                let last = LocalDate(daysSinceEpoch: dayNumber + 7).month != day.month
                let week = last && rng.below(2) == 0 ? -1 : (day.day - 1) / 7 + 1
                rule = .monthlyRelative(weekOfMonth: week == 5 ? -1 : week, dayOfWeek: weekday, interval: interval)
                start = monthsBack(interval * periods)
            case 3:
                rule = .annual(month: day.month, dayOfMonth: day.day, interval: interval)
                start = LocalDate(year: day.year - interval * periods, month: 1 + rng.below(day.month), day: 1)!
            case 4:
                let n = 1 + rng.below(4)
                rule = .customDays(intervalDays: n)
                start = day.adding(days: -Int64(n * rng.below(10)))
            default:
                rule = .oneTime(date: day)
                start = day.adding(days: -Int64(rng.below(5)))
            }
            let timeCount = 1 + rng.below(5)
            let window = Int(highWall - lowWall) / 60 + 60  // minutes from 30 before to 30 after the odd hour
            let times = distinct(&rng, timeCount) { rng -> TimeOfDay in
                if rng.below(4) == 0 { return TimeOfDay(hour: rng.below(24), minute: rng.below(60))! }
                let wall = lowWall - 1800 + Int64(rng.below(window)) * 60
                let secondOfDay = ((wall % 86_400) + 86_400) % 86_400
                return TimeOfDay(hour: Int(secondOfDay / 3600), minute: Int(secondOfDay / 60 % 60))!
            }
            return AlarmTiming(schedule: Schedule(rule, startDate: start), timesOfDay: times, timezone: zone)
        }

        static func make(_ rng: inout SplitMix64, zone: String) -> AlarmTiming {
            let startDay = CivilDate.toDays(year: 2009, month: 1, day: 1) + Int64(rng.below(22 * 365))
            let start = LocalDate(daysSinceEpoch: startDay)
            let rule: Schedule.Rule
            let kind = rng.below(6)
            let count = 1 + rng.below(3)
            let interval = 1 + rng.below(kind == 0 ? 4 : kind == 3 ? 3 : 6)
            switch kind {
            case 0:
                rule = .weekly(daysOfWeek: distinct(&rng, count) { 1 + $0.below(7) }, interval: interval)
            case 1:
                let days = distinct(&rng, count) { $0.below(2) == 0 ? 28 + $0.below(4) : 1 + $0.below(31) }
                rule = .monthlyDate(daysOfMonth: days, interval: interval)
            case 2:
                rule = .monthlyRelative(
                    weekOfMonth: [1, 2, 3, 4, -1, 5][rng.below(6)], dayOfWeek: 1 + rng.below(7), interval: interval)
            case 3:
                let month = 1 + rng.below(12)
                let length = Int(CivilDate.daysInMonth(year: 2000, month: Int64(month)))
                let day = rng.below(3) == 0 ? length : 1 + rng.below(length)
                rule = .annual(month: month, dayOfMonth: day, interval: interval)
            case 4:
                rule = .customDays(intervalDays: rng.below(2) == 0 ? 1 + rng.below(3) : 1 + rng.below(120))
            default:
                rule = .oneTime(date: start.adding(days: Int64(rng.below(400))))
            }
            let end = rng.below(4) == 0 ? start.adding(days: Int64(rng.below(800))) : nil
            let timeCount = 1 + rng.below(5)
            let times = distinct(&rng, timeCount) { rng -> TimeOfDay in
                let hour = rng.below(2) == 0 ? rng.below(5) : rng.below(24)
                let minute = rng.below(2) == 0 ? [0, 15, 30, 45, 59][rng.below(5)] : rng.below(60)
                return TimeOfDay(hour: hour, minute: minute)!
            }
            return AlarmTiming(
                schedule: Schedule(rule, startDate: start, endDate: end), timesOfDay: times, timezone: zone)
        }

        private static func distinct<T: Hashable>(
            _ rng: inout SplitMix64, _ count: Int, _ draw: (inout SplitMix64) -> T
        )
            -> [T]
        {
            var out: [T] = []
            while out.count < count {
                let value = draw(&rng)
                if !out.contains(value) { out.append(value) }
            }
            return out
        }
    }

}
