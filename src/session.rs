//! The per-session working_memory delta channel: what changed versus what this session was already
//! served. [`advance`] and [`worst_delta`] are pure; [`run_turn`] reads the state and the facts about
//! known refs through the store, and stores the next state with compare-and-swap.
//!
//! Invariants (property-tested): **no leak** — `new` holds only refs served in this pack; `evicted`
//! and `superseded` hold only refs this session was already given; **no resend** — a known ref is
//! never new again until it was evicted; **eviction soundness** — a ref is evicted only when absent
//! from this pack and unseen for ≥ 4 turns, or dropped by the 512 cap, or no longer readable (deleted,
//! redacted, moved to another scope: the consumer should drop what it holds). **ours**: cap drops
//! and unreadable refs are reported in `evicted`, so a consumer's mirror of the working set stays exact.

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
    let superseded_set: HashSet<&str> = superseded.iter().map(|s| s.0.as_str()).collect();
    let mut new = Vec::new();
    for (r, rel) in pack {
        if !state.known.contains_key(r) && !superseded_set.contains(r.as_str()) {
            new.push((r.clone(), *rel));
        }
    }
    let mut known: BTreeMap<String, i64> = state.known.clone();
    for r in evicted.iter().chain(superseded.iter().map(|s| &s.0)) {
        known.remove(r);
    }
    for (r, _) in pack {
        if !superseded_set.contains(r.as_str()) {
            known.insert(r.clone(), turn);
        }
    }
    if known.len() > KNOWN_CAP {
        let mut v: Vec<(String, i64)> = known.into_iter().collect();
        // Most recently served first; ties by id.
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for (r, _) in v.drain(KNOWN_CAP..) {
            // A ref new this turn and dropped at once was never held by the consumer: drop it from
            // `new` instead of announcing and evicting it in one breath.
            if let Some(pos) = new.iter().position(|n| n.0 == r) {
                new.remove(pos);
            } else {
                evicted.push(r);
            }
        }
        known = v.into_iter().collect();
    }
    evicted.sort();
    evicted.dedup();
    superseded.sort();
    let mut trajectory = state.trajectory.clone();
    trajectory.push(Step { turn, tokens, ids: pack.iter().map(|p| p.0.clone()).collect() });
    if trajectory.len() > TRAJECTORY_WINDOW {
        trajectory.drain(..trajectory.len() - TRAJECTORY_WINDOW);
    }
    let mut centroid: BTreeMap<String, f64> = state
        .centroid
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
    let next = State { turn, cursor, known, trajectory, centroid, legend: state.legend.clone() };
    (next, Delta { new, evicted, superseded, cursor })
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
}

/// Reads session `sid` of `scope` at horizon `h` (a Julian day): its state and what each ref it
/// holds is now.
pub fn load_turn(conn: &Connection, sid: &str, scope: &str, h: f64) -> Result<Turn> {
    let stored = store::load_session(conn, sid, scope)?;
    let state: State = match &stored {
        Some(s) => serde_json::from_str(s).map_err(|e| {
            Error::Session(format!("session {sid:?} has corrupt state ({e}); reset it with cmp_session_reset"))
        })?,
        None => State::default(),
    };
    let known: Vec<String> = state.known.keys().cloned().collect();
    let status = store::ref_status(conn, &known, scope, h)?;
    Ok(Turn { stored, state, status })
}

/// Runs one turn of session `sid`: `attempt` renders an output for the turn as read and returns it
/// with the next state, which is stored (at time `at`) only if no other turn advanced the session
/// since it was read (compare-and-swap on the cursor); otherwise the turn is read again and retried,
/// at most [`SESSION_RETRIES`] times.
pub fn run_turn<T>(
    conn: &Connection,
    sid: &str,
    scope: &str,
    h: f64,
    at: &str,
    mut attempt: impl FnMut(&Turn) -> Result<(T, State)>,
) -> Result<T> {
    for _ in 0..SESSION_RETRIES {
        let turn = load_turn(conn, sid, scope, h)?;
        let (out, next) = attempt(&turn)?;
        let text = serde_json::to_string(&next).map_err(|e| Error::Internal(e.to_string()))?;
        let expected = turn.stored.as_ref().map(|_| turn.state.cursor);
        let saved = store::save_session(conn, sid, scope, expected, next.turn, next.cursor, &text, at)?;
        if saved {
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
}
