//! The per-session working_memory delta channel (docs/protocol.md, "Sessions"): what changed
//! versus what this session was already served. [`advance`] and [`worst_delta`] are pure;
//! [`run_turn`] reads the state and the facts about known refs through the store (or, with the
//! connection's [`LastTurn`], knows them unchanged), and stores the next state with compare-and-swap.
//!
//! Invariants (property-tested): **no leak** — `new` holds only refs served in this pack; `evicted`
//! and `superseded` hold only refs this session was already given; **no resend** — a known ref is
//! never new again until it was evicted; **eviction soundness** — a ref is evicted only when absent
//! from this pack and unseen for ≥ 4 turns, or dropped by the 512 cap, or no longer readable (deleted,
//! redacted, moved to another scope: the consumer should drop what it holds). Unlike the reference
//! protocol, cap drops and unreadable refs are reported in `evicted`, so a consumer's mirror of the
//! working set stays exact.

use crate::error::{Error, Result};
use crate::store;
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Turns a ref may go unseen before eviction.
pub const EVICTION_TTL_TURNS: i64 = 4;
/// Trajectory window.
pub const TRAJECTORY_WINDOW: usize = 8;
/// Known-set cap.
pub const KNOWN_CAP: usize = 512;
/// Terms kept in the centroid.
pub const CENTROID_TERMS: usize = 64;
/// Decay of past task terms in the centroid per turn.
pub const CENTROID_DECAY: f64 = 0.8;

/// One trajectory entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Turn number.
    pub turn: i64,
    /// Tokens used by the pack.
    pub tokens: usize,
    /// Refs served.
    pub ids: Vec<String>,
}

/// Session state.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct State {
    /// Turns so far.
    pub turn: i64,
    /// Delta cursor (monotonic).
    pub cursor: i64,
    /// Known ref → last-served turn.
    pub known: BTreeMap<String, i64>,
    /// Last turns.
    pub trajectory: Vec<Step>,
    /// Recency-weighted term counts of past tasks.
    pub centroid: BTreeMap<String, f64>,
    /// Fingerprint of the legend this session was last sent: later turns send it only if it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legend: Option<String>,
    /// Where the memory row of each known ref was found, in the order of `known` (None: not a
    /// memory, or not looked up yet): lets the next turn read those rows by rowid. Only a hint, checked
    /// against the row's id ([`crate::store::ref_status`]); not part of what `cmp_session` shows, and
    /// ignored unless it has one entry per known ref (states written before it have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "lenient_rows")]
    pub rows: Vec<Option<i64>>,
}

/// [`State::rows`] as stored, or none when it is not an array of rowids and nulls: a hint never
/// makes a state unreadable (a field a build does not know was always ignored).
fn lenient_rows<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<Option<i64>>, D::Error> {
    let Value::Array(a) = Value::deserialize(d)? else { return Ok(Vec::new()) };
    let row = |x: &Value| match x {
        Value::Null => Some(None),
        other => other.as_i64().map(Some),
    };
    Ok(a.iter().map(row).collect::<Option<Vec<_>>>().unwrap_or_default())
}

/// What a known ref is now (read by [`crate::store::ref_status`]).
pub use crate::store::Status;

/// The delta of one turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Delta {
    /// (ref, delta_relevance) in pack order.
    pub new: Vec<(String, Option<f64>)>,
    /// Refs the consumer may forget, sorted.
    pub evicted: Vec<String>,
    /// (ref, replacement) sorted by ref.
    pub superseded: Vec<(String, Option<String>)>,
    /// The delta cursor after this turn.
    pub cursor: i64,
}

impl Delta {
    /// The envelope's `working_memory` object.
    pub fn to_json(&self) -> Value {
        json!({
            "new": self.new.iter().map(|(r, rel)| json!({"ref": r, "delta_relevance": rel.map(|x| (x * 1e6).round() / 1e6)})).collect::<Vec<_>>(),
            "evicted": self.evicted,
            "superseded": self.superseded.iter().map(|(r, rep)| json!({"ref": r, "replacement": rep})).collect::<Vec<_>>(),
            "cursor": self.cursor.to_string(),
        })
    }
}

/// The largest `evicted` and `superseded` the next turn can report, whatever it packs (the 512 cap
/// aside): what an envelope must leave room for before packing.
pub fn worst_delta(state: &State, status: &HashMap<String, Status>) -> Delta {
    let turn = state.turn + 1;
    let mut d = Delta { cursor: state.cursor + 1, ..Delta::default() };
    for (r, &last) in &state.known {
        match status.get(r).unwrap_or(&Status::Live) {
            Status::Superseded(head) => d.superseded.push((r.clone(), head.clone())),
            Status::Gone => d.evicted.push(r.clone()),
            Status::Live if turn - last >= EVICTION_TTL_TURNS => d.evicted.push(r.clone()),
            Status::Live => {}
        }
    }
    d
}

/// Advances `state` by one turn that served `pack` ((ref, relevance) in pack order) using `tokens`,
/// for a task with stemmed `terms`. `status` tells what each known ref is now (missing ⇒ Live).
pub fn advance(
    state: &State,
    pack: &[(String, Option<f64>)],
    tokens: usize,
    terms: &[String],
    status: &HashMap<String, Status>,
) -> (State, Delta) {
    let turn = state.turn + 1;
    let cursor = state.cursor + 1;
    let in_pack: HashSet<&str> = pack.iter().map(|p| p.0.as_str()).collect();
    let (mut superseded, mut evicted) = outgoing(state, turn, &in_pack, status);
    let superseded_set: HashSet<&str> = superseded.iter().map(|s| s.0.as_str()).collect();
    let mut new: Vec<(String, Option<f64>)> = pack
        .iter()
        .filter(|(r, _)| !state.known.contains_key(r) && !superseded_set.contains(r.as_str()))
        .cloned()
        .collect();
    let mut known: BTreeMap<String, i64> = state.known.clone();
    for r in evicted.iter().chain(superseded.iter().map(|s| &s.0)) {
        known.remove(r);
    }
    for (r, _) in pack {
        if !superseded_set.contains(r.as_str()) {
            known.insert(r.clone(), turn);
        }
    }
    let known = cap_known(known, &mut new, &mut evicted);
    evicted.sort();
    evicted.dedup();
    superseded.sort();
    let trajectory =
        next_trajectory(&state.trajectory, Step { turn, tokens, ids: pack.iter().map(|p| p.0.clone()).collect() });
    let centroid = next_centroid(&state.centroid, terms);
    let next = State { turn, cursor, known, trajectory, centroid, legend: state.legend.clone(), rows: Vec::new() };
    (next, Delta { new, evicted, superseded, cursor })
}

/// The known refs leaving the working set at `turn`: (superseded with the head the consumer can
/// resolve, evicted: gone, or live but absent from the pack and unseen for the TTL), unsorted.
fn outgoing(
    state: &State,
    turn: i64,
    in_pack: &HashSet<&str>,
    status: &HashMap<String, Status>,
) -> (Vec<(String, Option<String>)>, Vec<String>) {
    let mut superseded = Vec::new();
    let mut evicted = Vec::new();
    for (r, &last) in &state.known {
        match status.get(r).unwrap_or(&Status::Live) {
            Status::Superseded(head) => {
                let head = head.clone().filter(|h| in_pack.contains(h.as_str()) || state.known.contains_key(h));
                superseded.push((r.clone(), head));
            }
            Status::Gone => evicted.push(r.clone()),
            Status::Live => {
                if !in_pack.contains(r.as_str()) && turn - last >= EVICTION_TTL_TURNS {
                    evicted.push(r.clone());
                }
            }
        }
    }
    (superseded, evicted)
}

/// Holds the known set to [`KNOWN_CAP`], most recently served first (ties by id). A dropped ref is
/// evicted, unless it is new this turn: the consumer never held it, so it leaves `new` instead of
/// being announced and evicted in one breath.
fn cap_known(
    known: BTreeMap<String, i64>,
    new: &mut Vec<(String, Option<f64>)>,
    evicted: &mut Vec<String>,
) -> BTreeMap<String, i64> {
    if known.len() <= KNOWN_CAP {
        return known;
    }
    let mut v: Vec<(String, i64)> = known.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    for (r, _) in v.drain(KNOWN_CAP..) {
        if let Some(pos) = new.iter().position(|n| n.0 == r) {
            new.remove(pos);
        } else {
            evicted.push(r);
        }
    }
    v.into_iter().collect()
}

/// The last [`TRAJECTORY_WINDOW`] steps with `step` appended.
fn next_trajectory(past: &[Step], step: Step) -> Vec<Step> {
    let kept = &past[past.len().saturating_sub(TRAJECTORY_WINDOW - 1)..];
    let mut trajectory = Vec::with_capacity(kept.len() + 1);
    trajectory.extend_from_slice(kept);
    trajectory.push(step);
    trajectory
}

/// The centroid decayed by [`CENTROID_DECAY`] (rounded to 1e-6, negligible terms dropped), this
/// task's terms counted once each occurrence, the heaviest [`CENTROID_TERMS`] kept (ties by term).
fn next_centroid(past: &BTreeMap<String, f64>, terms: &[String]) -> BTreeMap<String, f64> {
    let mut centroid: BTreeMap<String, f64> = past
        .iter()
        .map(|(k, v)| (k.clone(), (v * CENTROID_DECAY * 1e6).round() / 1e6))
        .filter(|(_, v)| *v > 1e-4)
        .collect();
    for t in terms {
        *centroid.entry(t.clone()).or_default() += 1.0;
    }
    if centroid.len() > CENTROID_TERMS {
        let mut v: Vec<(String, f64)> = centroid.into_iter().collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.truncate(CENTROID_TERMS);
        centroid = v.into_iter().collect();
    }
    centroid
}

/// Attempts before a session turn gives up on concurrent writers.
pub const SESSION_RETRIES: usize = 64;

/// A session as read at the start of a turn.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The stored state text (None: the session starts now).
    pub stored: Option<String>,
    /// The state.
    pub state: State,
    /// What each known ref is now.
    pub status: HashMap<String, Status>,
    /// Where each known ref's memory row is, in the order of `state.known` (see [`State::rows`]).
    pub rows: Vec<Option<i64>>,
}

/// The turn a connection stored last, kept by the caller for the next turn on the same connection:
/// every ref its state holds was live at its horizon (a turn keeps only live refs and adds only
/// refs it just read as eligible), so while the database is unchanged since ([`store::WriteMark`])
/// and the horizon is the same, or no row of the store is superseded at any horizon, they are
/// still live and the next turn need not read them again.
#[derive(Debug, Clone)]
pub struct LastTurn {
    sid: String,
    scope: String,
    text: String,
    state: State,
    h: f64,
    mark: store::WriteMark,
}

impl LastTurn {
    /// The turn `turn` stored as `next` (text `text`) at horizon `h`, or None when a ref it holds is
    /// not known to be live: held and judged live, or in `live`.
    fn after(
        conn: &Connection,
        turn: &Turn,
        next: State,
        text: String,
        at: (&str, &str, f64),
        live: &HashSet<&str>,
    ) -> Result<Option<Self>> {
        let all_live = next
            .known
            .keys()
            .all(|r| !turn.status.contains_key(r) && (turn.state.known.contains_key(r) || live.contains(r.as_str())));
        if !all_live {
            return Ok(None);
        }
        let (sid, scope, h) = at;
        let Some(mark) = store::write_mark(conn)? else { return Ok(None) };
        Ok(Some(LastTurn { sid: sid.into(), scope: scope.into(), text, state: next, h, mark }))
    }

    /// This turn's state, if `stored` is the state it stored and its refs are all still live at `h`.
    fn still(self, conn: &Connection, sid: &str, scope: &str, stored: Option<&str>, h: f64) -> Result<Option<State>> {
        let same = self.sid == sid && self.scope == scope && stored == Some(self.text.as_str());
        if !same || store::write_mark(conn)? != Some(self.mark) {
            return Ok(None);
        }
        // A NaN horizon equals none: only a store without superseded rows keeps its turn then.
        if self.h != h && store::any_superseded(conn)? {
            return Ok(None);
        }
        Ok(Some(self.state))
    }
}

/// Reads session `sid` of `scope` at horizon `h` (a Julian day): its state and what each ref it
/// holds is now. Refs in `live` are known to be live (the caller just read them as eligible at this
/// horizon: retrieval's candidates) and are not read again; their rows keep the last turn's hint.
/// No ref is read when `last`, the turn this connection stored last, shows they are all still live.
pub fn load_turn(
    conn: &Connection,
    sid: &str,
    scope: &str,
    h: f64,
    live: &HashSet<&str>,
    last: Option<LastTurn>,
) -> Result<Turn> {
    let t = crate::timing::phase("session: read, parse state");
    let stored = store::load_session(conn, sid, scope)?;
    let kept = match last {
        Some(l) => l.still(conn, sid, scope, stored.as_deref(), h)?,
        None => None,
    };
    if let Some(state) = kept {
        let rows = hints(&state);
        return Ok(Turn { stored, state, status: HashMap::new(), rows });
    }
    let state = match &stored {
        Some(s) => parse_state(sid, s)?,
        None => State::default(),
    };
    drop(t);
    let _t = crate::timing::phase("session: status of known refs");
    let mut rows = hints(&state);
    let known: Vec<&String> = state.known.keys().collect();
    let asked: Vec<usize> = (0..known.len()).filter(|&i| !live.contains(known[i].as_str())).collect();
    let refs: Vec<String> = asked.iter().map(|&i| known[i].clone()).collect();
    let asked_rows: Vec<Option<i64>> = asked.iter().map(|&i| rows[i]).collect();
    let read = store::ref_status(conn, &refs, &asked_rows, scope, h)?;
    for (j, &i) in asked.iter().enumerate() {
        rows[i] = read.rows.get(j).copied().flatten();
    }
    Ok(Turn { stored, state, status: read.status, rows })
}

/// A stored session state, or the error that says how to get past a corrupt one.
fn parse_state(sid: &str, stored: &str) -> Result<State> {
    serde_json::from_str(stored).map_err(|e| {
        Error::Session(format!("session {sid:?} has corrupt state ({e}); reset it with cmp_session_reset"))
    })
}

/// Session `sid` of `scope` as `cmp_session` shows it now (None: no such session): a ref that is no
/// longer readable here (redacted, moved to another scope, deleted) is left out of `known` and of
/// every trajectory step, as from every other output, even before the next turn evicts it.
pub fn shown(conn: &Connection, sid: &str, scope: &str) -> Result<Option<State>> {
    let Some(stored) = store::load_session(conn, sid, scope)? else {
        return Ok(None);
    };
    let mut state = parse_state(sid, &stored)?;
    let refs: Vec<String> = state
        .known
        .keys()
        .chain(state.trajectory.iter().flat_map(|s| &s.ids))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let status = store::ref_status(conn, &refs, &[], scope, crate::time::julian(crate::time::now()))?.status;
    let gone = |r: &String| matches!(status.get(r), Some(store::Status::Gone));
    state.known.retain(|r, _| !gone(r));
    for step in &mut state.trajectory {
        step.ids.retain(|r| !gone(r));
    }
    Ok(Some(state))
}

/// The row hints of `state`, one per known ref (all None when it has none that fit).
fn hints(state: &State) -> Vec<Option<i64>> {
    if state.rows.len() == state.known.len() {
        state.rows.clone()
    } else {
        vec![None; state.known.len()]
    }
}

/// The rows of `next`'s known refs that `turn` found (see [`State::rows`]); empty when none. Both
/// known sets are sorted: one merge, no lookups.
fn next_rows(turn: &Turn, next: &State) -> Vec<Option<i64>> {
    if turn.rows.iter().all(Option::is_none) {
        return Vec::new();
    }
    let mut found = turn.state.known.keys().zip(&turn.rows).peekable();
    let mut rows = Vec::with_capacity(next.known.len());
    for r in next.known.keys() {
        while found.next_if(|(k, _)| k.as_str() < r.as_str()).is_some() {}
        rows.push(found.next_if(|(k, _)| *k == r).and_then(|(_, row)| *row));
    }
    rows
}

/// Runs one turn of session `sid`: `attempt` renders an output for the turn as read and returns it
/// with the next state, which is stored (at time `at`) only if no other turn advanced the session
/// since it was read (compare-and-swap on the cursor); otherwise the turn is read again and retried,
/// at most [`SESSION_RETRIES`] times. `live`: refs the caller knows are live; `last`: the turn this
/// connection stored last, replaced by this one ([`load_turn`]).
#[allow(clippy::too_many_arguments)]
pub fn run_turn<T>(
    conn: &Connection,
    sid: &str,
    scope: &str,
    h: f64,
    at: &str,
    live: &HashSet<&str>,
    last: &mut Option<LastTurn>,
    mut attempt: impl FnMut(&Turn) -> Result<(T, State)>,
) -> Result<T> {
    for _ in 0..SESSION_RETRIES {
        let turn = load_turn(conn, sid, scope, h, live, last.take())?;
        let (out, mut next) = attempt(&turn)?;
        let _t = crate::timing::phase("session: serialise, store state");
        next.rows = next_rows(&turn, &next);
        let text = serde_json::to_string(&next).map_err(|e| Error::Internal(e.to_string()))?;
        let expected = turn.stored.as_ref().map(|_| turn.state.cursor);
        let saved = store::save_session(conn, sid, scope, expected, next.turn, next.cursor, &text, at)?;
        if saved {
            *last = LastTurn::after(conn, &turn, next, text, (sid, scope, h), live)?;
            return Ok(out);
        }
    }
    Err(Error::Session(format!("session {sid:?} is busy: concurrent turns kept winning; retry")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(v: &[&str]) -> Vec<(String, Option<f64>)> {
        v.iter().map(|r| (r.to_string(), Some(0.5))).collect()
    }

    #[test]
    fn three_turns() {
        let s0 = State::default();
        let (s1, d1) = advance(&s0, &refs(&["a", "b"]), 100, &[], &HashMap::new());
        assert_eq!(d1.new.len(), 2);
        assert_eq!(d1.cursor, 1);
        let (s2, d2) = advance(&s1, &refs(&["a", "b", "c"]), 150, &[], &HashMap::new());
        assert_eq!(d2.new, refs(&["c"]));
        let (_, d3) = advance(&s2, &refs(&["a", "b", "c"]), 150, &[], &HashMap::new());
        assert!(d3.new.is_empty());
        assert_eq!(d3.cursor, 3);
    }

    #[test]
    fn evicts_cold_refs_and_maps_supersession() {
        let mut s = State::default();
        s = advance(&s, &refs(&["old", "x"]), 10, &[], &HashMap::new()).0;
        for _ in 0..3 {
            let (next, d) = advance(&s, &refs(&["x"]), 10, &[], &HashMap::new());
            assert!(d.evicted.is_empty(), "unseen for fewer than 4 turns");
            s = next;
        }
        // Served at turn 1, unseen at turns 2..=5: evicted at turn 5.
        let (s4, d) = advance(&s, &refs(&["x"]), 10, &[], &HashMap::new());
        assert_eq!(d.evicted, vec!["old".to_string()]);
        let mut st = HashMap::new();
        st.insert("x".to_string(), Status::Superseded(Some("y".into())));
        let (_, d) = advance(&s4, &refs(&["y"]), 10, &[], &st);
        assert_eq!(d.superseded, vec![("x".to_string(), Some("y".to_string()))]);
        assert_eq!(d.new, refs(&["y"]));
    }

    fn live() -> HashMap<String, Status> {
        HashMap::new()
    }

    #[test]
    fn gone_refs_are_evicted_and_superseded_heads_hidden_unless_held() {
        let (s, _) = advance(&State::default(), &refs(&["a", "b", "c"]), 10, &[], &live());
        let st: HashMap<String, Status> = [
            ("a".to_string(), Status::Gone),
            ("b".to_string(), Status::Superseded(Some("secret".into()))),
            ("c".to_string(), Status::Superseded(None)),
        ]
        .into();
        let (next, d) = advance(&s, &refs(&["c"]), 10, &[], &st);
        assert_eq!(d.evicted, vec!["a".to_string()]);
        // The consumer never saw "secret": its id is not revealed. A superseded ref is not new again.
        assert_eq!(d.superseded, vec![("b".to_string(), None), ("c".to_string(), None)]);
        assert!(d.new.is_empty());
        assert!(next.known.is_empty(), "{:?}", next.known);
    }

    #[test]
    fn the_known_set_is_capped_most_recent_first() {
        let first: Vec<String> = (0..KNOWN_CAP).map(|i| format!("old{i:03}")).collect();
        let first: Vec<&str> = first.iter().map(String::as_str).collect();
        let (s, _) = advance(&State::default(), &refs(&first), 10, &[], &live());
        let (s, d) = advance(&s, &refs(&["fresh1", "fresh2"]), 10, &[], &live());
        assert_eq!(d.new, refs(&["fresh1", "fresh2"]));
        // Ties on the last-served turn go by id: the two largest old ids leave.
        assert_eq!(d.evicted, vec!["old510".to_string(), "old511".to_string()]);
        assert_eq!(s.known.len(), KNOWN_CAP);
        assert_eq!(s.known["fresh1"], 2);
    }

    #[test]
    fn a_ref_new_and_capped_in_one_turn_is_neither_new_nor_evicted() {
        let many: Vec<String> = (0..KNOWN_CAP + 1).map(|i| format!("r{i:03}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let (s, d) = advance(&State::default(), &refs(&many), 10, &[], &live());
        assert_eq!(d.new.len(), KNOWN_CAP);
        assert!(d.evicted.is_empty());
        assert!(!s.known.contains_key("r512"));
    }

    #[test]
    fn trajectory_and_centroid_are_bounded() {
        let mut s = State::default();
        for t in 0..TRAJECTORY_WINDOW + 3 {
            let terms: Vec<String> = (0..CENTROID_TERMS + 5).map(|i| format!("t{t}_{i}")).collect();
            s = advance(&s, &refs(&["a"]), t, &terms, &live()).0;
        }
        assert_eq!(s.trajectory.len(), TRAJECTORY_WINDOW);
        assert_eq!(s.trajectory.last().map(|x| x.tokens), Some(TRAJECTORY_WINDOW + 2));
        assert_eq!(s.centroid.len(), CENTROID_TERMS);
        // The latest task's terms weigh 1, older ones are decayed.
        assert!(s.centroid.values().all(|&v| v == 1.0));
        let (next, _) = advance(&s, &[], 0, &["x".to_string(), "x".to_string()], &live());
        assert_eq!(next.centroid["x"], 2.0);
        assert!(next.centroid.iter().filter(|(k, _)| *k != "x").all(|(_, &v)| v == CENTROID_DECAY));
    }

    #[test]
    fn the_worst_delta_covers_what_any_turn_reports() {
        let (mut s, _) = advance(&State::default(), &refs(&["a", "b", "c"]), 10, &[], &live());
        for _ in 0..3 {
            s = advance(&s, &refs(&["c"]), 10, &[], &live()).0;
        }
        let st: HashMap<String, Status> = [("c".to_string(), Status::Superseded(Some("d".into())))].into();
        let worst = worst_delta(&s, &st);
        for pack in [vec![], vec!["a"], vec!["a", "b", "d"]] {
            let (_, d) = advance(&s, &refs(&pack), 10, &[], &st);
            assert!(d.evicted.iter().all(|r| worst.evicted.contains(r)), "{pack:?}");
            assert!(d.superseded.iter().all(|(r, _)| worst.superseded.iter().any(|w| &w.0 == r)));
            assert_eq!(d.cursor, worst.cursor);
        }
        assert_eq!(worst.evicted, vec!["a".to_string(), "b".to_string()]);
    }

    fn store_with(ids: &[&str]) -> Connection {
        let conn = Connection::open_in_memory().expect("open");
        crate::register(&conn).expect("register");
        crate::store::init(&conn).expect("init");
        for id in ids {
            conn.execute("INSERT INTO main.cmp_memories(id, content, scope) VALUES (?1, 'x', 's')", [id]).expect("row");
        }
        conn
    }

    fn stored(conn: &Connection) -> Value {
        let text = store::load_session(conn, "sid", "s").expect("load").expect("stored");
        serde_json::from_str(&text).expect("json")
    }

    /// One turn serving `pack`, run through [`run_turn`] as `cmp_context` does.
    fn turn(conn: &Connection, pack: &[&str]) -> (Turn, State) {
        run_turn(conn, "sid", "s", 2_460_000.0, "2025-01-01T00:00:00Z", &HashSet::new(), &mut None, |t| {
            let next = advance(&t.state, &refs(pack), 10, &[], &t.status).0;
            Ok(((t.clone(), next.clone()), next))
        })
        .expect("turn")
    }

    /// A turn at horizon `h` serving `pack` (all of it `live`), keeping what it stored in `last`.
    fn kept_turn(conn: &Connection, pack: &[&str], h: f64, last: &mut Option<LastTurn>) {
        let live: HashSet<&str> = pack.iter().copied().collect();
        run_turn(conn, "sid", "s", h, "2025-01-01T00:00:00Z", &live, last, |t| {
            let next = advance(&t.state, &refs(pack), 10, &[], &t.status).0;
            Ok(((), next))
        })
        .expect("turn");
    }

    #[test]
    fn the_last_turn_holds_until_a_write_or_a_new_horizon_with_superseded_rows() {
        let conn = store_with(&["a", "b", "c"]);
        let (h, mut last) = (2_460_000.0, None);
        kept_turn(&conn, &["a", "b"], h, &mut last);
        let still = |last: &Option<LastTurn>, h: f64| {
            let stored = store::load_session(&conn, "sid", "s").expect("load");
            last.clone().expect("kept").still(&conn, "sid", "s", stored.as_deref(), h).expect("still").is_some()
        };
        assert!(still(&last, h), "nothing written since");
        assert!(still(&last, h + 1.0), "no row is superseded: any horizon");
        let other = |sid: &str, scope: &str| {
            let stored = store::load_session(&conn, "sid", "s").expect("load");
            last.clone().expect("kept").still(&conn, sid, scope, stored.as_deref(), h).expect("still").is_some()
        };
        assert!(!other("sid2", "s") && !other("sid", "t"), "another session or scope");
        conn.execute("UPDATE main.cmp_memories SET redacted = 1 WHERE id = 'c'", []).expect("redact");
        assert!(!still(&last, h), "a write since, even to a row the session does not hold");
        kept_turn(&conn, &["a"], h, &mut last);
        assert!(still(&last, h));
        conn.execute(
            "UPDATE main.cmp_memories SET superseded_by = 'b', superseded_at = '2100-01-01' WHERE id = 'c'",
            [],
        )
        .expect("supersede");
        kept_turn(&conn, &["a"], h, &mut last);
        assert!(still(&last, h) && !still(&last, h + 1.0), "a superseded row: the same horizon only");
        // A turn that served a ref neither held nor known to be live keeps nothing.
        run_turn(&conn, "sid", "s", h, "2025-01-01T00:00:00Z", &HashSet::new(), &mut last, |t| {
            Ok(((), advance(&t.state, &refs(&["d"]), 10, &[], &t.status).0))
        })
        .expect("turn");
        assert!(last.is_none());
    }

    #[test]
    fn a_connection_with_another_database_attached_keeps_no_turn() {
        let conn = store_with(&["a"]);
        let mut last = None;
        kept_turn(&conn, &["a"], 2_460_000.0, &mut last);
        assert!(last.is_some());
        // Another connection's write to the attached file would not move main's data_version.
        conn.execute_batch("ATTACH ':memory:' AS other").expect("attach");
        kept_turn(&conn, &["a"], 2_460_000.0, &mut last);
        assert!(last.is_none());
    }

    #[test]
    fn a_state_stored_before_row_hints_loads_and_gains_them() {
        let conn = store_with(&["a", "b"]);
        let old = r#"{"turn":1,"cursor":1,"known":{"a":1,"b":1,"x":1},"trajectory":[],"centroid":{}}"#;
        assert!(store::save_session(&conn, "sid", "s", None, 1, 1, old, "t").expect("save"));
        let (read, _) = turn(&conn, &["a"]);
        assert!(read.state.rows.is_empty());
        assert_eq!(read.status, [("x".to_string(), Status::Gone)].into());
        let rid = |id: &str| -> i64 {
            conn.query_row("SELECT rid FROM main.cmp_memories WHERE id = ?1", [id], |r| r.get(0)).expect("rid")
        };
        let v = stored(&conn);
        assert_eq!(v["known"], json!({"a": 2, "b": 1}));
        assert_eq!(v["rows"], json!([rid("a"), rid("b")]));
        // The next turn reads them by rowid, and a ref new to it has no row yet.
        conn.execute("INSERT INTO main.cmp_memories(id, content, scope) VALUES ('c', 'x', 's')", []).expect("c");
        let (read, next) = turn(&conn, &["a", "c"]);
        assert_eq!(read.rows, vec![Some(rid("a")), Some(rid("b"))]);
        assert_eq!(next.known.len(), 3);
        assert_eq!(stored(&conn)["rows"], json!([rid("a"), rid("b"), null]));
    }

    #[test]
    fn row_hints_that_are_not_rowids_are_ignored() {
        let parse = |rows: &str| -> State {
            let text =
                format!(r#"{{"turn":1,"cursor":1,"known":{{"a":1}},"trajectory":[],"centroid":{{}},"rows":{rows}}}"#);
            serde_json::from_str(&text).expect("a state, whatever its hints")
        };
        assert_eq!(parse("[7]").rows, vec![Some(7)]);
        assert_eq!(parse("[null]").rows, vec![None]);
        for odd in [r#""x""#, "[1.5]", r#"["7"]"#, "{}", "null", "[[1]]"] {
            assert!(parse(odd).rows.is_empty(), "{odd}");
        }
    }

    #[test]
    fn next_rows_follow_the_refs_into_the_next_known_set() {
        let state =
            State { known: [("a", 1), ("c", 1), ("d", 1)].map(|(r, t)| (r.to_string(), t)).into(), ..State::default() };
        let read = Turn { stored: None, state, status: HashMap::new(), rows: vec![Some(1), None, Some(4)] };
        let next = State {
            known: [("b", 2), ("c", 2), ("d", 2), ("e", 2)].map(|(r, t)| (r.to_string(), t)).into(),
            ..State::default()
        };
        assert_eq!(next_rows(&read, &next), vec![None, None, Some(4), None]);
        let none = Turn { rows: vec![None; 3], ..read };
        assert!(next_rows(&none, &next).is_empty());
    }

    #[test]
    fn the_delta_serialises_as_working_memory() {
        let d = Delta {
            new: vec![("a".into(), Some(0.123_456_78)), ("b".into(), None)],
            evicted: vec!["c".into()],
            superseded: vec![("d".into(), Some("e".into()))],
            cursor: 7,
        };
        assert_eq!(
            d.to_json().to_string(),
            r#"{"new":[{"ref":"a","delta_relevance":0.123457},{"ref":"b","delta_relevance":null}],"evicted":["c"],"superseded":[{"ref":"d","replacement":"e"}],"cursor":"7"}"#
        );
    }
}
