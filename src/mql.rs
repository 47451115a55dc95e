//! The Memory Query Language (docs/reference.md, `cmp_query`): strict parsing (every field checked,
//! nothing clamped silently) and narrowing, which only ever removes items, in the documented order:
//! superseded (when valid_only) → unlisted kinds → entity misses → relevance < min_relevance →
//! confidence-else-trust < min_trust.

use crate::error::{Error, Result};
use crate::options::{parse_scope, parse_time, short};
use crate::time::{self, Epoch};
use serde_json::{json, Map, Value};

/// Memory kinds `layers` may list.
pub const KINDS: [&str; 7] = crate::store::Kind::NAMES;
/// Longest ask/find text.
pub const MAX_QUERY_CHARS: usize = 500;
/// Most entities.
pub const MAX_ENTITIES: usize = 20;
/// Longest entity name.
pub const MAX_ENTITY_CHARS: usize = 160;
/// Page size bounds and default.
pub const K_MIN: i64 = 1;
/// Largest page.
pub const K_MAX: i64 = 50;
/// Default page size.
pub const K_DEFAULT: i64 = 8;
/// budget_tokens bounds (ask mode).
pub const BUDGET_MIN: i64 = 300;
/// Largest ask budget.
pub const BUDGET_MAX: i64 = 6000;
/// Longest model string.
pub const MAX_MODEL_CHARS: usize = 200;

/// The keys an MQL object may hold (besides `cursor`, given alone).
pub const FIELDS: [&str; 15] = [
    "ask",
    "find",
    "layers",
    "entities",
    "as_of",
    "valid_only",
    "scope",
    "now",
    "min_relevance",
    "min_trust",
    "budget_tokens",
    "model",
    "expand",
    "k",
    "offset",
];

/// find = retrieval; ask = the packed rows of cmp_context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Packed rows.
    Ask,
    /// Retrieval candidates.
    Find,
}

/// A validated MQL query.
#[derive(Debug, Clone, PartialEq)]
pub struct Mql {
    /// ask or find.
    pub mode: Mode,
    /// The query text.
    pub text: String,
    /// Kinds to keep.
    pub layers: Option<Vec<String>>,
    /// Entities to keep (any match).
    pub entities: Option<Vec<String>>,
    /// Time travel.
    pub as_of: Option<Epoch>,
    /// Drop superseded rows.
    pub valid_only: bool,
    /// Owner namespace.
    pub scope: String,
    /// Clock.
    pub now: Epoch,
    /// Relevance floor.
    pub min_relevance: Option<f64>,
    /// Confidence-else-trust floor.
    pub min_trust: Option<f64>,
    /// Ask budget.
    pub budget_tokens: Option<i64>,
    /// Ask model.
    pub model: Option<String>,
    /// Suggested follow-up direction for the top hit.
    pub expand: Option<String>,
    /// Page size.
    pub k: usize,
    /// Page start (set by cursors; may also be given).
    pub offset: usize,
}

fn unit(field: &str, v: &Value) -> Result<f64> {
    match v.as_f64() {
        Some(x) if v.is_number() && (0.0..=1.0).contains(&x) => Ok(x),
        Some(x) if v.is_number() => Err(Error::invalid(field, format!("must be within [0, 1], got {x}"))),
        _ => Err(Error::invalid(field, format!("must be a number within [0, 1], got {}", short(v)))),
    }
}

fn int_in(field: &str, v: &Value, lo: i64, hi: i64) -> Result<i64> {
    match v.as_i64() {
        Some(x) if (lo..=hi).contains(&x) => Ok(x),
        _ if v.is_number() => Err(Error::invalid(field, format!("must be an integer within [{lo}, {hi}], got {v}"))),
        _ => Err(Error::invalid(field, format!("must be an integer within [{lo}, {hi}], got {}", short(v)))),
    }
}

fn strings(field: &str, v: &Value) -> Result<Vec<String>> {
    let Value::Array(a) = v else {
        return Err(Error::invalid(field, format!("must be an array of strings, got {}", short(v))));
    };
    a.iter()
        .enumerate()
        .map(|(i, x)| match x {
            Value::String(s) => Ok(s.clone()),
            other => Err(Error::invalid(format!("{field}[{i}]"), format!("must be a string, got {}", short(other)))),
        })
        .collect()
}

/// Parses and validates MQL JSON text.
pub fn parse(text: &str) -> Result<Mql> {
    from_map(&crate::options::json_object(text, "mql")?)
}

/// Validates an MQL object. Fields are checked in the object's order: the first bad one is the error.
pub fn from_map(map: &Map<String, Value>) -> Result<Mql> {
    for k in map.keys() {
        if !FIELDS.contains(&k.as_str()) {
            return Err(Error::usage(format!("unknown field {k:?} (accepted: {})", FIELDS.join(", "))));
        }
    }
    let (mode, text) = mode_and_text(map)?;
    let mut m = Mql::new(mode, text);
    for (k, v) in map {
        m.set(k, v)?;
    }
    Ok(m)
}

/// The mode (exactly one of `ask` and `find`) and its text.
fn mode_and_text(map: &Map<String, Value>) -> Result<(Mode, String)> {
    let (mode, field, v) = match (map.get("ask"), map.get("find")) {
        (Some(_), Some(_)) => return Err(Error::usage("give exactly one of ask or find, got both")),
        (None, None) => return Err(Error::usage("give exactly one of ask or find, got neither")),
        (Some(a), None) => (Mode::Ask, "ask", a),
        (None, Some(f)) => (Mode::Find, "find", f),
    };
    let text = match v {
        Value::String(s) if s.trim().is_empty() => return Err(Error::invalid(field, "must be a non-blank string")),
        Value::String(s) if s.chars().count() > MAX_QUERY_CHARS => {
            return Err(Error::invalid(
                field,
                format!("must be at most {MAX_QUERY_CHARS} characters, got {}", s.chars().count()),
            ))
        }
        Value::String(s) => s.clone(),
        other => return Err(Error::invalid(field, format!("must be a string, got {}", short(other)))),
    };
    Ok((mode, text))
}

impl Mql {
    /// A query with every optional field at its default.
    fn new(mode: Mode, text: String) -> Mql {
        Mql {
            mode,
            text,
            layers: None,
            entities: None,
            as_of: None,
            valid_only: true,
            scope: "default".into(),
            now: time::now(),
            min_relevance: None,
            min_trust: None,
            budget_tokens: None,
            model: None,
            expand: None,
            k: K_DEFAULT as usize,
            offset: 0,
        }
    }

    /// Validates and sets one optional field (`ask` and `find` are read by [`mode_and_text`]).
    fn set(&mut self, k: &str, v: &Value) -> Result<()> {
        match k {
            "layers" => self.layers = Some(layers(v)?),
            "entities" => self.entities = Some(entities(v)?),
            "as_of" => self.as_of = Some(parse_time("as_of", v)?),
            "now" => self.now = parse_time("now", v)?,
            "scope" => self.scope = parse_scope(v)?,
            "valid_only" => match v {
                Value::Bool(b) => self.valid_only = *b,
                other => return Err(Error::invalid("valid_only", format!("must be a boolean, got {}", short(other)))),
            },
            "min_relevance" => self.min_relevance = Some(unit("min_relevance", v)?),
            "min_trust" => self.min_trust = Some(unit("min_trust", v)?),
            "budget_tokens" => {
                if self.mode == Mode::Find {
                    return Err(Error::invalid("budget_tokens", "applies to ask, not find"));
                }
                self.budget_tokens = Some(int_in("budget_tokens", v, BUDGET_MIN, BUDGET_MAX)?);
            }
            "model" => self.model = Some(model(self.mode, v)?),
            "expand" => self.expand = Some(expand(v)?),
            "k" => self.k = int_in("k", v, K_MIN, K_MAX)? as usize,
            "offset" => self.offset = int_in("offset", v, 0, 1_000_000)? as usize,
            _ => {}
        }
        Ok(())
    }
}

/// `layers`: a non-empty list of known kinds.
fn layers(v: &Value) -> Result<Vec<String>> {
    let l = strings("layers", v)?;
    if l.is_empty() {
        return Err(Error::invalid("layers", "must list at least one kind"));
    }
    if let Some(x) = l.iter().find(|x| !KINDS.contains(&x.as_str())) {
        return Err(Error::invalid("layers", format!(": unknown kind {x:?} (kinds: {})", KINDS.join(", "))));
    }
    Ok(l)
}

/// `entities`: 1..=[`MAX_ENTITIES`] names of 1..[`MAX_ENTITY_CHARS`] characters (an empty list would
/// match no row, like an empty `layers`, which is refused for the same reason).
fn entities(v: &Value) -> Result<Vec<String>> {
    let e = strings("entities", v)?;
    if e.is_empty() {
        return Err(Error::invalid("entities", "must list at least one name"));
    }
    if e.len() > MAX_ENTITIES {
        return Err(Error::invalid("entities", format!("must list at most {MAX_ENTITIES} names, got {}", e.len())));
    }
    if let Some(x) = e.iter().find(|x| x.trim().is_empty() || x.chars().count() > MAX_ENTITY_CHARS) {
        return Err(Error::invalid(
            "entities",
            format!(": each name must be 1..{MAX_ENTITY_CHARS} characters, got {}", short(&json!(x))),
        ));
    }
    Ok(e)
}

/// `model` (ask only): a string of at most [`MAX_MODEL_CHARS`] characters.
fn model(mode: Mode, v: &Value) -> Result<String> {
    if mode == Mode::Find {
        return Err(Error::invalid("model", "applies to ask, not find"));
    }
    match v {
        Value::String(s) if s.chars().count() <= MAX_MODEL_CHARS => Ok(s.clone()),
        other => Err(Error::invalid(
            "model",
            format!("must be a string of at most {MAX_MODEL_CHARS} characters, got {}", short(other)),
        )),
    }
}

/// `expand`: the follow-up direction suggested for the top hit.
fn expand(v: &Value) -> Result<String> {
    match v.as_str() {
        Some(d @ ("document" | "neighbors" | "more")) => Ok(d.to_string()),
        _ => Err(Error::invalid("expand", format!("must be one of document, neighbors, more, got {}", short(v)))),
    }
}

impl Mql {
    /// The read point ([`crate::time::horizon`]).
    pub fn horizon(&self) -> Epoch {
        crate::time::horizon(self.now, self.as_of)
    }

    /// The query as a canonical object (the clock fixed), for cursors.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        o.insert(if self.mode == Mode::Ask { "ask" } else { "find" }.into(), json!(self.text));
        if let Some(l) = &self.layers {
            o.insert("layers".into(), json!(l));
        }
        if let Some(e) = &self.entities {
            o.insert("entities".into(), json!(e));
        }
        if let Some(a) = self.as_of {
            o.insert("as_of".into(), json!(time::format_precise(a)));
        }
        o.insert("valid_only".into(), json!(self.valid_only));
        o.insert("scope".into(), json!(self.scope));
        o.insert("now".into(), json!(time::format_precise(self.now)));
        if let Some(x) = self.min_relevance {
            o.insert("min_relevance".into(), json!(x));
        }
        if let Some(x) = self.min_trust {
            o.insert("min_trust".into(), json!(x));
        }
        if let Some(x) = self.budget_tokens {
            o.insert("budget_tokens".into(), json!(x));
        }
        if let Some(x) = &self.model {
            o.insert("model".into(), json!(x));
        }
        if let Some(x) = &self.expand {
            o.insert("expand".into(), json!(x));
        }
        o.insert("k".into(), json!(self.k));
        o.insert("offset".into(), json!(self.offset));
        Value::Object(o)
    }
}

/// A result row as narrowing sees it.
#[derive(Debug, Clone)]
pub struct Row {
    /// The MemoryObject.
    pub object: Value,
    /// Memory kind (None for tasks).
    pub kind: Option<String>,
    /// Superseded at the horizon.
    pub superseded: bool,
    /// Relevance.
    pub relevance: Option<f64>,
    /// Confidence, else trust.
    pub trust: Option<f64>,
    /// Entity names.
    pub entities: Vec<String>,
}

/// Whether two entity names are the same, ignoring surrounding white space and case (Unicode
/// lowercase, so "ÉMILE" is "Émile").
fn same_name(a: &str, b: &str) -> bool {
    a.trim().chars().flat_map(char::to_lowercase).eq(b.trim().chars().flat_map(char::to_lowercase))
}

/// Applies the narrowing filters in order; only ever removes rows.
pub fn narrow(rows: Vec<Row>, m: &Mql) -> Vec<Row> {
    rows.into_iter()
        .filter(|r| !(m.valid_only && r.superseded))
        .filter(|r| m.layers.as_ref().is_none_or(|l| r.kind.as_ref().is_some_and(|k| l.contains(k))))
        .filter(|r| {
            m.entities.as_ref().is_none_or(|want| r.entities.iter().any(|e| want.iter().any(|w| same_name(w, e))))
        })
        .filter(|r| m.min_relevance.is_none_or(|min| r.relevance.unwrap_or(0.0) >= min))
        .filter(|r| m.min_trust.is_none_or(|min| r.trust.unwrap_or(0.0) >= min))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_field_and_value() {
        for (q, want) in [
            (r#"{"find":"x","min_relevance":2.5}"#, "q: min_relevance must be within [0, 1], got 2.5"),
            (r#"{"find":"x","ask":"y"}"#, "q: give exactly one of ask or find, got both"),
            (r#"{"k":3}"#, "q: give exactly one of ask or find, got neither"),
            (r#"{"find":"  "}"#, "q: find must be a non-blank string"),
            (r#"{"find":"x","layers":["semantic","gossip"]}"#, "q: layers: unknown kind \"gossip\""),
            (r#"{"find":"x","k":0}"#, "q: k must be an integer within [1, 50], got 0"),
            (r#"{"find":"x","k":2.5}"#, "q: k must be an integer within [1, 50], got 2.5"),
            (r#"{"ask":"x","budget_tokens":100}"#, "q: budget_tokens must be an integer within [300, 6000], got 100"),
            (r#"{"find":"x","budget_tokens":1000}"#, "q: budget_tokens applies to ask"),
            (r#"{"find":"x","whatever":1}"#, "q: unknown field \"whatever\""),
            (r#"{"find":"x","valid_only":"yes"}"#, "q: valid_only must be a boolean"),
            (r#"{"find":"x","as_of":"soon"}"#, "q: as_of must be an ISO-8601 timestamp"),
            (r#"{"find":"x","entities":[]}"#, "q: entities must list at least one name"),
            (r#"{"find":"x","expand":"sideways"}"#, "q: expand must be one of document, neighbors, more"),
            (r#"[]"#, "q: mql must be a JSON object"),
        ] {
            let e = parse(q).unwrap_err().in_function("q").to_string();
            assert!(e.starts_with(want), "{q}: {e}");
        }
        let m = parse(r#"{"find":"atlas","k":3,"min_trust":0.5,"now":"2026-01-01"}"#).unwrap();
        assert_eq!((m.mode, m.k, m.min_trust), (Mode::Find, 3, Some(0.5)));
        let again = from_map(m.to_value().as_object().unwrap()).unwrap();
        assert_eq!(again, m);
    }
}
