//! Dated retrieval: a task that names a day or a month ("what did Kevin do on 23.01.2024?", "on
//! October 13, 2023", "in June", "2024年1月23日") is about what was recorded then. The ranking offers
//! the memories recorded in that span: first the full-text matches among them, in their order, then,
//! for a named day, the day's other memories in time order (a day's conversation about it may share
//! no word with the task).
//!
//! People write about a day on it or in the days after, and a chat's timestamps need not be in the
//! writer's zone, so a span reaches [`BEFORE_SECS`] before the day (or month) and [`AFTER_SECS`] after
//! it. A date without a year is the latest such date at or before the read point.

use super::pool::{Pool, Ranking};
use super::{Query, FTS_LIMIT};
use crate::time::{self, Epoch};
use regex::Regex;
use rusqlite::Connection;
use std::sync::OnceLock;

/// How far before a named day or month its span starts (seconds).
pub const BEFORE_SECS: f64 = 12.0 * 3600.0;
/// How far after a named day or month its span ends (seconds).
pub const AFTER_SECS: f64 = 48.0 * 3600.0;
/// Most spans read from one task.
pub const MAX_SPANS: usize = 4;
/// Most date expressions read from one task (valid or not), so a flood of dates costs no more than a
/// few.
pub const MAX_READ: usize = 16;
/// Most memories read from a named day that matched no task word.
pub const DAY_LIMIT: usize = 100;

const DAY: f64 = 86_400.0;

/// A day or a month the task names, as `[start, end)` in epoch seconds (UTC), before the slack.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Named {
    /// First instant.
    pub start: Epoch,
    /// First instant after it.
    pub end: Epoch,
    /// True for a day, false for a month.
    pub day: bool,
}

impl Named {
    /// The span memories are read from: the day or month widened by the slack.
    pub fn span(&self) -> (Epoch, Epoch) {
        let h = 3600.0;
        let before = super::knob("CMP_DATED_BEFORE_H", BEFORE_SECS / h) * h;
        let after = super::knob("CMP_DATED_AFTER_H", AFTER_SECS / h) * h;
        (self.start - before, self.end + after)
    }
}

/// The English month names, in order.
pub const MONTH_NAMES: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The month alternatives of the patterns: the names, then their abbreviations.
fn months() -> String {
    format!("{}|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec", MONTH_NAMES.join("|"))
}

/// The month (1–12) a month name or abbreviation stands for.
fn month_number(name: &str) -> Option<u32> {
    let n = name.to_ascii_lowercase();
    let all = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    all.iter().position(|m| n.starts_with(m)).map(|i| i as u32 + 1)
}

/// The patterns, in the order they are tried; a later one never reads text an earlier one matched.
fn patterns() -> &'static [(Form, Regex)] {
    static P: OnceLock<Vec<(Form, Regex)>> = OnceLock::new();
    P.get_or_init(|| {
        let re = |s: String| Regex::new(&s).expect("a valid date pattern");
        let months = months();
        vec![
            (Form::Iso, re(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b".into())),
            (Form::Dotted, re(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b".into())),
            (Form::Slashed, re(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b".into())),
            (
                Form::DayMonth,
                re(format!(r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+({months})\b\.?(?:,?\s+(\d{{4}})\b)?")),
            ),
            (Form::MonthDay, re(format!(r"(?i)\b({months})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?"))),
            (Form::MonthYear, re(format!(r"(?i)\b({months})\.?,?\s+(\d{{4}})\b"))),
            (Form::Month, re(format!(r"(?i)\b(?:in|during|since|of|last|this)\s+({months})\b"))),
            (Form::Han, re(r"(?:(\d{4})\s*年\s*)?(\d{1,2})\s*月(?:\s*(\d{1,2})\s*[日号])?".into())),
        ]
    })
}

#[derive(Debug, Clone, Copy)]
enum Form {
    Iso,
    Dotted,
    Slashed,
    DayMonth,
    MonthDay,
    MonthYear,
    Month,
    Han,
}

/// The days and months `task` names (at most [`MAX_SPANS`]), resolved against the read point
/// `horizon`; none for a task without a date.
pub fn named(task: &str, horizon: Epoch) -> Vec<Named> {
    let mut taken: Vec<(usize, usize)> = Vec::new();
    let mut out = Vec::new();
    for (form, re) in patterns() {
        for c in re.captures_iter(task) {
            if out.len() == MAX_SPANS || taken.len() == MAX_READ {
                return out;
            }
            let whole = c.get(0).map_or((0, 0), |m| (m.start(), m.end()));
            if taken.iter().any(|&(s, e)| whole.0 < e && s < whole.1) {
                continue;
            }
            let num = |k: usize| c.get(k).and_then(|m| m.as_str().parse::<i64>().ok());
            let text = |k: usize| c.get(k).map_or("", |m| m.as_str());
            let found: Vec<Named> = match form {
                Form::Iso => day(num(1), num(2), num(3), horizon).into_iter().collect(),
                Form::Dotted => day(num(3), num(2), num(1), horizon).into_iter().collect(),
                Form::Slashed => {
                    // 03/04/2024 is either; a part above 12 settles it.
                    let (a, b) = (num(1).unwrap_or(0), num(2).unwrap_or(0));
                    let mut v: Vec<Named> = Vec::new();
                    if b <= 12 {
                        v.extend(day(num(3), Some(b), Some(a), horizon));
                    }
                    if a <= 12 && a != b {
                        v.extend(day(num(3), Some(a), Some(b), horizon));
                    }
                    v
                }
                Form::DayMonth => {
                    day(num(3), month_number(text(2)).map(i64::from), num(1), horizon).into_iter().collect()
                }
                Form::MonthDay => {
                    day(num(3), month_number(text(1)).map(i64::from), num(2), horizon).into_iter().collect()
                }
                Form::MonthYear => month(num(2), month_number(text(1)).map(i64::from), horizon).into_iter().collect(),
                Form::Month => month(None, month_number(text(1)).map(i64::from), horizon).into_iter().collect(),
                Form::Han => match num(3) {
                    Some(_) => day(num(1), num(2), num(3), horizon).into_iter().collect(),
                    None => month(num(1), num(2), horizon).into_iter().collect(),
                },
            };
            // Text a pattern read is a date, valid or not: no later pattern reads it again.
            taken.push(whole);
            for n in found {
                if out.len() < MAX_SPANS && !out.contains(&n) {
                    out.push(n);
                }
            }
        }
    }
    out
}

/// The first instant of a civil date, if it exists.
fn midnight(y: i64, m: i64, d: i64) -> Option<Epoch> {
    if !(1..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let t = time::parse(&format!("{y:04}-{m:02}-{d:02}"))?;
    // The calendar parse accepts a day past the month's end only if it says so; check it round-trips.
    time::format(t).starts_with(&format!("{y:04}-{m:02}-{d:02}")).then_some(t)
}

/// The year of `horizon`.
fn year_of(horizon: Epoch) -> i64 {
    time::format(horizon).get(..4).and_then(|y| y.parse().ok()).unwrap_or(1970)
}

/// A named day; without a year, the latest one at or before `horizon`.
fn day(y: Option<i64>, m: Option<i64>, d: Option<i64>, horizon: Epoch) -> Option<Named> {
    let (m, d) = (m?, d?);
    let start = match y {
        Some(y) => midnight(y, m, d)?,
        None => {
            let y = year_of(horizon);
            match midnight(y, m, d) {
                Some(t) if t <= horizon => t,
                _ => midnight(y - 1, m, d)?,
            }
        }
    };
    Some(Named { start, end: start + DAY, day: true })
}

/// A named month; without a year, the latest one that began at or before `horizon`.
fn month(y: Option<i64>, m: Option<i64>, horizon: Epoch) -> Option<Named> {
    let m = m?;
    let y = match y {
        Some(y) => y,
        None => {
            let y = year_of(horizon);
            if midnight(y, m, 1)? <= horizon {
                y
            } else {
                y - 1
            }
        }
    };
    let start = midnight(y, m, 1)?;
    let end = if m == 12 { midnight(y + 1, 1, 1)? } else { midnight(y, m + 1, 1)? };
    Some(Named { start, end, day: false })
}

/// The dated ranking: the members of the full-text ranking `fts` recorded in a span the task names,
/// in their order, then the other memories of a named day in time order; empty for a task without a
/// date.
pub fn rank(conn: &Connection, q: &Query<'_>, fts: &[usize], pool: &mut Pool) -> rusqlite::Result<Ranking> {
    let named = named(q.task, q.horizon);
    if named.is_empty() {
        return Ok(Vec::new());
    }
    let inside = |t: Option<Epoch>| {
        t.is_some_and(|t| {
            named.iter().any(|n| {
                let (s, e) = n.span();
                t >= s && t < e
            })
        })
    };
    let mut ranking: Ranking = fts.iter().copied().filter(|&i| inside(time::parse(pool.when(i)))).collect();
    let day_limit = super::knob("CMP_DATED_DAY", DAY_LIMIT as f64) as usize;
    for n in named.iter().filter(|n| n.day && day_limit > 0) {
        let (s, e) = n.span();
        // The span's bounds as text (a wider read would spend the limit outside the span on a busy
        // store); what the text order lets in is then kept only if it parses into the span.
        let (from, to) = (time::format(s), time::format(e));
        for m in crate::store::memories::recorded_between(conn, q.reader(), &from, &to, day_limit)? {
            if inside(time::parse(m.occurred_at.as_deref().unwrap_or(&m.captured_at))) {
                let i = pool.add(m);
                if !ranking.contains(&i) {
                    ranking.push(i);
                }
            }
        }
    }
    ranking.truncate(FTS_LIMIT);
    Ok(ranking)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::testdb::{add, ids, open, query};
    use crate::retrieve::{fts, Terms};

    fn at(s: &str) -> Epoch {
        time::parse(s).expect("a test time")
    }

    fn days(task: &str) -> Vec<String> {
        named(task, at("2024-03-01T00:00:00Z"))
            .iter()
            .map(|n| format!("{}{}", &time::format(n.start)[..10], if n.day { "" } else { " month" }))
            .collect()
    }

    #[test]
    fn reads_the_ways_people_write_a_day() {
        assert_eq!(days("What did Kevin do on 23.01.2024?"), ["2024-01-23"]);
        assert_eq!(days("on 2024-01-23"), ["2024-01-23"]);
        assert_eq!(days("How many naps on January 6 2024?"), ["2024-01-06"]);
        assert_eq!(days("painting shown on October 13, 2023"), ["2023-10-13"]);
        assert_eq!(days("call on 3 Jan 2024"), ["2024-01-03"]);
        assert_eq!(days("on the 10th of February 2024"), ["2024-02-10"]);
        assert_eq!(days("on 1 February, 2023"), ["2023-02-01"]);
        assert_eq!(days("2024年1月23日我做了什么"), ["2024-01-23"]);
        assert_eq!(days("25/12/2023 and 03/04/2024"), ["2023-12-25", "2024-04-03", "2024-03-04"]);
    }

    #[test]
    fn a_month_and_a_date_without_year_are_the_latest_before_the_read_point() {
        assert_eq!(days("What did Maria start in December 2023?"), ["2023-12-01 month"]);
        // The read point is 2024-03-01: June is last year's, February this year's.
        assert_eq!(days("When did Melanie go camping in June?"), ["2023-06-01 month"]);
        assert_eq!(days("what happened on February 10"), ["2024-02-10"]);
        assert_eq!(days("1月的会议"), ["2024-01-01 month"]);
    }

    #[test]
    fn no_date_no_span() {
        for task in ["what did they cook", "I may go", "the 2024 plan", "room 12.5", "31.02.2024", "13/13/2024", ""] {
            assert!(days(task).is_empty(), "{task}");
        }
    }

    #[test]
    fn edge_dates_and_floods_of_dates_are_read_safely() {
        assert_eq!(days("on 9999-12-31 and 0001-01-01"), ["9999-12-31", "0001-01-01"]);
        assert!(days("in December 9999, 0000-01-01, 10000-01-01").is_empty());
        let flood = "on 23.01.2024 ".repeat(50_000) + &"99.99.9999 ".repeat(50_000);
        assert_eq!(days(&flood), ["2024-01-23"]);
        let many: String = (1..=28).map(|d| format!("{d}.01.2024 ")).collect();
        assert_eq!(named(&many, 0.0).len(), MAX_SPANS);
    }

    #[test]
    fn a_busy_day_before_the_span_does_not_use_up_the_days_limit() {
        let conn = open();
        for i in 0..DAY_LIMIT + 20 {
            add(&conn, &format!("mem_before_{i}"), "another note", "2024-01-21T18:00:00Z", "episodic", "[]");
        }
        add(&conn, "mem_day", "lunch with the team", "2024-01-23T12:00:00Z", "episodic", "[]");
        let q = query("what happened on 23.01.2024?");
        let mut pool = Pool::default();
        let r = rank(&conn, &q, &[], &mut pool).expect("dated");
        assert_eq!(ids(&pool, &r), ["mem_day"]);
    }

    #[test]
    fn a_span_reaches_before_and_after_its_day() {
        let n = named("on 23.01.2024", 0.0)[0];
        assert_eq!(n.span(), (at("2024-01-22T12:00:00Z"), at("2024-01-26T00:00:00Z")));
    }

    #[test]
    fn ranks_matches_of_the_day_then_the_days_other_memories() {
        let conn = open();
        add(&conn, "mem_old", "yoga in the park", "2024-01-02T08:00:00Z", "episodic", "[]");
        add(&conn, "mem_day", "yoga with Kevin", "2024-01-23T08:00:00Z", "episodic", "[]");
        add(&conn, "mem_next", "then we had lunch", "2024-01-24T09:00:00Z", "episodic", "[]");
        add(&conn, "mem_late", "lunch again", "2024-01-29T09:00:00Z", "episodic", "[]");
        let q = query("what yoga did Kevin do on 23.01.2024?");
        let mut pool = Pool::default();
        let lex = fts::rank(&conn, &q, &Terms::of(q.task), &mut pool).expect("fts");
        let r = rank(&conn, &q, &lex.ranking, &mut pool).expect("dated");
        assert_eq!(ids(&pool, &r), ["mem_day", "mem_next"]);
        assert!(rank(&conn, &query("what yoga?"), &lex.ranking, &mut pool).expect("undated").is_empty());
    }
}
