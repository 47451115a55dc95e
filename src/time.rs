//! ISO-8601 timestamps: a strict parser (so bad input is an error, not a silent mis-ordering) and the
//! formatter used for every timestamp cmp writes. The calendar (month lengths, leap years, day
//! numbers) is `jiff`'s; the grammar is ours, narrower than the RFC 3339 / RFC 9557 forms `jiff`'s own
//! parser takes: no basic format (`20260601`), no `[zone]` annotation, no offset seconds, offsets
//! below 24 hours, a fraction of any length, and a leap second counted as a whole second.

use jiff::civil::Date;
use jiff::Span;

/// Seconds since the Unix epoch, as f64 (sub-second precision kept).
pub type Epoch = f64;

/// The point a read sees the store at: `as_of` when given, but never later than `now`. `as_of` looks
/// back in time; a read at a later point would show rows captured after `now`, which are not
/// visible yet, so a later `as_of` reads at `now`.
pub fn horizon(now: Epoch, as_of: Option<Epoch>) -> Epoch {
    as_of.map_or(now, |a| a.min(now))
}

/// 1970-01-01, day 0 of [`Epoch`].
const EPOCH: Date = Date::constant(1970, 1, 1);

/// Days in 400 Gregorian years: the calendar repeats with this period.
const CYCLE_DAYS: i64 = 146_097;

/// An unsigned decimal of ASCII digits only (no sign, no other script's digits).
fn num(s: &[u8]) -> Option<i64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// `YYYY-MM-DD` (a real calendar date) as seconds since the epoch.
fn date_secs(b: &[u8]) -> Option<i64> {
    let [_, _, _, _, b'-', _, _, b'-', _, _] = b else { return None };
    let (y, m, d) = (num(&b[0..4])?, num(&b[5..7])?, num(&b[8..10])?);
    let date = Date::new(y as i16, m as i8, d as i8).ok()?;
    Some(date.duration_since(EPOCH).as_secs())
}

/// `HH:MM[:SS[(.|,)fraction]]` followed by the zone: (whole seconds into the day, fraction, zone).
/// A second of 60 (a leap second) counts as one more second.
fn clock(b: &[u8]) -> Option<(i64, f64, &[u8])> {
    if b.len() < 5 || b[2] != b':' {
        return None;
    }
    let (h, mi) = (num(&b[0..2])?, num(&b[3..5])?);
    if h > 23 || mi > 59 {
        return None;
    }
    let mut secs = h * 3600 + mi * 60;
    let mut frac = 0.0;
    let mut i = 5;
    if b.get(i) == Some(&b':') {
        let sec = num(b.get(i + 1..i + 3)?)?;
        if sec > 60 {
            return None;
        }
        secs += sec;
        i += 3;
        if matches!(b.get(i), Some(b'.' | b',')) {
            let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 {
                return None;
            }
            let end = i + 1 + digits;
            frac = std::str::from_utf8(&b[i..end]).ok()?.replace(',', ".").parse().ok()?;
            i = end;
        }
    }
    Some((secs, frac, &b[i..]))
}

/// The zone after a clock, as seconds east of UTC: none, `Z`, or `±HH[[:]MM]`.
fn offset(zone: &[u8]) -> Option<i64> {
    let (sign, tail) = match zone {
        [] | [b'Z' | b'z'] => return Some(0),
        [b'+', tail @ ..] => (1, tail),
        [b'-', tail @ ..] => (-1, tail),
        _ => return None,
    };
    let (h, m) = match tail {
        [a, b, b':', c, d] | [a, b, c, d] => (num(&[*a, *b])?, num(&[*c, *d])?),
        [a, b] => (num(&[*a, *b])?, 0),
        _ => return None,
    };
    if h > 23 || m > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60))
}

/// Parses `YYYY-MM-DD`, optionally followed by `T` or a space, `HH:MM[:SS[.fraction]]` and a zone
/// (`Z` or `±HH:MM`/`±HHMM`/`±HH`; none means UTC). Returns None for anything else.
pub fn parse(s: &str) -> Option<Epoch> {
    let b = s.trim().as_bytes();
    let day = date_secs(b.get(..10)?)?;
    let rest = &b[10..];
    let Some((sep, rest)) = rest.split_first() else { return Some(day as f64) };
    if !matches!(sep, b'T' | b't' | b' ') {
        return None;
    }
    let (secs, frac, zone) = clock(rest)?;
    let off = offset(zone)?;
    Some(((day + secs) as f64 + frac) - off as f64)
}

/// The civil date `days` after 1970-01-01, for any `days`: `jiff`'s calendar, moved by whole 400-year
/// cycles into its range (years -9999..=9999) and back.
fn civil(days: i64) -> (i64, i8, i8) {
    let cycles = days.div_euclid(CYCLE_DAYS);
    // Within 1970..2370, so always in range.
    let date = EPOCH.checked_add(Span::new().days(days.rem_euclid(CYCLE_DAYS))).unwrap_or(EPOCH);
    (i64::from(date.year()) + 400 * cycles, date.month(), date.day())
}

/// Formats as `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds).
pub fn format(t: Epoch) -> String {
    let secs = t.floor() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, (rem % 3600) / 60, rem % 60)
}

/// Formats with microseconds (`YYYY-MM-DDTHH:MM:SS.ffffffZ`), so a stored clock round-trips.
pub fn format_precise(t: Epoch) -> String {
    let whole = t.floor();
    let micros = ((t - whole) * 1e6).round().min(999_999.0) as i64;
    let base = format(whole);
    format!("{}.{micros:06}Z", &base[..base.len() - 1])
}

/// The wall clock, used only when a caller gives no `now`.
pub fn now() -> Epoch {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Julian day number of an epoch time, for comparisons with SQLite's `julianday()`.
pub fn julian(t: Epoch) -> f64 {
    t / 86_400.0 + 2_440_587.5
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every accepted form, with the epoch it denotes (computed in the same order as the parser adds
    /// its parts, so float results compare exactly).
    #[test]
    fn as_of_looks_back_never_ahead() {
        assert_eq!(horizon(100.0, None), 100.0);
        assert_eq!(horizon(100.0, Some(40.0)), 40.0);
        assert_eq!(horizon(100.0, Some(400.0)), 100.0);
    }

    #[test]
    fn accepts_each_documented_form() {
        let noon_june = 1_780_315_200.0;
        for (s, want) in [
            ("1970-01-01", 0.0),
            (" 1970-01-02\n", 86_400.0),
            ("1970-01-01T00:01:00Z", 60.0),
            ("1970-01-01t00:01:00z", 60.0),
            ("1970-01-01 00:01", 60.0),
            ("1970-01-01T00:01", 60.0),
            ("1970-01-01T00:00:00.5", 0.5),
            ("1970-01-01T00:00:00,25Z", 0.25),
            ("1970-01-01T01:00:00+01:00", 0.0),
            ("1970-01-01T01:00:00+0100", 0.0),
            ("1970-01-01T01:00+01", 0.0),
            ("1970-01-01T00:00-00:30", 1_800.0),
            ("1970-01-01T00:00:00-23:59", 86_340.0),
            ("1970-01-01T23:59:60Z", 86_400.0),
            ("2024-02-29T23:59:60Z", 1_709_251_200.0),
            ("1969-12-31T23:59:59Z", -1.0),
            ("2024-02-29T12:00", 1_709_208_000.0),
            ("2000-02-29", 951_782_400.0),
            ("2026-06-01T00:00:00Z ", 1_780_272_000.0),
            ("2026-06-01T12:00:00.123456+02:00", (noon_june + 0.123456) - 7_200.0),
            ("2026-06-01T12:00:00,5-0930", (noon_june + 0.5) + 34_200.0),
            ("2026-06-01T12:00:00.123456789Z", noon_june + 0.123456789),
            ("2026-06-01T00:00:00.99999999999999999999999999Z", 1_780_272_001.0),
            ("0000-01-01T00:00:00Z", -62_167_219_200.0),
            ("0000-01-01T00:00:00+23:59", -62_167_219_200.0 - 86_340.0),
            ("9999-12-31T23:59:59.999999Z", 253_402_300_799.0 + 0.999_999),
            ("9999-12-31T23:59:00-23:59", 253_402_300_740.0 + 86_340.0),
        ] {
            assert_eq!(parse(s), Some(want), "{s:?}");
        }
    }

    /// Every refused form (None, so the caller words the error).
    #[test]
    fn refuses_everything_else() {
        for bad in [
            "",
            "yesterday",
            "now",
            "12345",
            "2023-02-29",
            "1900-02-29",
            "2023-13-01",
            "2023-00-10",
            "2023-01-00",
            "2023-01-32",
            "2023-04-31",
            "2023-1-01",
            "20230101",
            "20230101T120000Z",
            "+2023-01-01",
            "-2023-01-01",
            "+12026-06-01",
            "२०२६-०६-०१",
            "２０２３-01-01",
            "2023-01-01Z",
            "2023-01-01X",
            "2023-01-01T",
            "2023-01-01T12",
            "2023-01-01T12Z",
            "2023-01-01T1:00",
            "2023-01-01T-1:00",
            "2023-01-01TT12:00",
            "2023-01-01T24:00",
            "2023-01-01T12:60",
            "2023-01-01T12:00:61",
            "2023-01-01T12:00:0",
            "2023-01-01T12:00:00.",
            "2023-01-01T12:00:00.Z",
            "2023-01-01T12:00.5",
            "2023-01-01T12:00:00.5.5",
            "2023-01-01T12:00 Z",
            "2023-01-01T12:00+24:00",
            "2023-01-01T12:00+01:60",
            "2023-01-01T12:00+01:00:00",
            "2023-01-01T12:00+1",
            "2023-01-01T12:00+01:0",
            "2023-01-01T12:00+0100Z",
            "2023-01-01T12:00Z[UTC]",
            "2023-01-01T12:00[UTC]",
            "2023-01-01T12:00:00Zjunk",
            "2026-06-01\u{0}",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn formats_whole_seconds_in_utc() {
        for (t, want) in [
            (0.0, "1970-01-01T00:00:00Z"),
            (1.9, "1970-01-01T00:00:01Z"),
            (-0.5, "1969-12-31T23:59:59Z"),
            (1_709_208_000.0, "2024-02-29T12:00:00Z"),
            (951_868_799.0, "2000-02-29T23:59:59Z"),
            (-62_167_219_200.0, "0000-01-01T00:00:00Z"),
            (-62_167_219_200.0 - 86_340.0, "-001-12-31T00:01:00Z"),
            (253_402_300_799.5, "9999-12-31T23:59:59Z"),
            (253_402_300_740.0 + 86_340.0, "10000-01-01T23:58:00Z"),
            (f64::NAN, "1970-01-01T00:00:00Z"),
        ] {
            assert_eq!(format(t), want, "{t}");
        }
    }

    #[test]
    fn formats_microseconds_and_round_trips() {
        assert_eq!(format_precise(0.5), "1970-01-01T00:00:00.500000Z");
        assert_eq!(format_precise(-0.25), "1969-12-31T23:59:59.750000Z");
        assert_eq!(format_precise(1.999_999_9), "1970-01-01T00:00:01.999999Z");
        let t = 1_780_315_200.123_456;
        assert!((parse(&format_precise(t)).unwrap() - t).abs() < 1e-6);
        assert_eq!(parse(&format(1_709_208_000.0)), Some(1_709_208_000.0));
    }

    /// Clocks far outside any calendar a crate supports still format (proleptic Gregorian, the
    /// year unpadded beyond four digits) and never panic.
    #[test]
    fn formats_extreme_clocks() {
        for (t, want) in [
            (f64::MAX, "292277026596-12-04T15:30:07Z"),
            (f64::INFINITY, "292277026596-12-04T15:30:07Z"),
            (f64::MIN, "-292277022657-01-27T08:29:52Z"),
            (f64::NEG_INFINITY, "-292277022657-01-27T08:29:52Z"),
            (9.2e18, "291536396232-08-31T11:33:20Z"),
            (-9.2e18, "-291536392293-05-03T12:26:40Z"),
            (1e15, "31690708-07-05T01:46:40Z"),
            (-1e15, "-31686769-06-29T22:13:20Z"),
        ] {
            assert_eq!(format(t), want, "{t:e}");
        }
        assert_eq!(format_precise(1e15), "31690708-07-05T01:46:40.000000Z");
        for t in [f64::MAX, f64::MIN, f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            let _ = format_precise(t);
        }
    }

    #[test]
    fn julian_day_of_the_epoch() {
        assert_eq!(julian(0.0), 2_440_587.5);
        assert_eq!(julian(86_400.0), 2_440_588.5);
    }
}
