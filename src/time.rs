//! ISO-8601 timestamps: a strict parser (so bad input is an error, not a silent mis-ordering) and the
//! formatter used for every timestamp cmp writes.

/// Seconds since the Unix epoch, as f64 (sub-second precision kept).
pub type Epoch = f64;

fn num(s: &[u8]) -> Option<i64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    // Howard Hinnant's algorithm: days since 1970-01-01 in the proleptic Gregorian calendar.
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Parses `YYYY-MM-DD`, optionally followed by `T` or a space, `HH:MM[:SS[.fraction]]` and a zone
/// (`Z` or `±HH:MM`/`±HHMM`; none means UTC). Returns None for anything else.
pub fn parse(s: &str) -> Option<Epoch> {
    let b = s.trim().as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, mo, d) = (num(&b[0..4])?, num(&b[5..7])?, num(&b[8..10])?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
        return None;
    }
    let mut secs = days_from_civil(y, mo, d) as f64 * 86_400.0;
    let rest = &b[10..];
    if rest.is_empty() {
        return Some(secs);
    }
    if rest[0] != b'T' && rest[0] != b't' && rest[0] != b' ' {
        return None;
    }
    let rest = &rest[1..];
    if rest.len() < 5 || rest[2] != b':' {
        return None;
    }
    let (h, mi) = (num(&rest[0..2])?, num(&rest[3..5])?);
    if h > 23 || mi > 59 {
        return None;
    }
    secs += (h * 3600 + mi * 60) as f64;
    let mut i = 5;
    if rest.len() > i && rest[i] == b':' {
        let sec = num(rest.get(i + 1..i + 3)?)?;
        if sec > 60 {
            return None;
        }
        secs += sec as f64;
        i += 3;
        if rest.len() > i && (rest[i] == b'.' || rest[i] == b',') {
            let start = i + 1;
            let mut end = start;
            while end < rest.len() && rest[end].is_ascii_digit() {
                end += 1;
            }
            if end == start {
                return None;
            }
            let frac: f64 = std::str::from_utf8(&rest[i..end]).ok()?.replace(',', ".").parse().ok()?;
            secs += frac;
            i = end;
        }
    }
    let zone = &rest[i..];
    match zone {
        [] | [b'Z'] | [b'z'] => Some(secs),
        [sign @ (b'+' | b'-'), tail @ ..] => {
            let (zh, zm) = match tail {
                [a, b2, b':', c, e] => (num(&[*a, *b2])?, num(&[*c, *e])?),
                [a, b2, c, e] => (num(&[*a, *b2])?, num(&[*c, *e])?),
                [a, b2] => (num(&[*a, *b2])?, 0),
                _ => return None,
            };
            if zh > 23 || zm > 59 {
                return None;
            }
            let off = (zh * 3600 + zm * 60) as f64;
            Some(if *sign == b'+' { secs - off } else { secs + off })
        }
        _ => None,
    }
}

/// Formats as `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds).
pub fn format(t: Epoch) -> String {
    let secs = t.floor() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
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

    #[test]
    fn parses_common_forms() {
        assert_eq!(parse("1970-01-01"), Some(0.0));
        assert_eq!(parse("1970-01-01T00:01:00Z"), Some(60.0));
        assert_eq!(parse("1970-01-01 01:00:00+01:00"), Some(0.0));
        assert_eq!(parse("1970-01-01T00:00:00.5"), Some(0.5));
        assert_eq!(parse("2024-02-29T12:00"), Some(1_709_208_000.0));
        assert_eq!(format(1_709_208_000.0), "2024-02-29T12:00:00Z");
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "yesterday", "2023-02-29", "2023-13-01", "2023-01-01T25:00", "2023-01-01X", "now", "12345"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
