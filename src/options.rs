//! The `options` JSON object shared by cmp_context, cmp_items, cmp_search, cmp_expand and the session
//! functions (each function's keys: docs/reference.md). Unknown keys are errors, never ignored.

use crate::error::{Error, Result};
use crate::time::{self, Epoch};
use serde_json::Value;

/// Longest accepted `query_embedding`.
pub const MAX_EMBEDDING_DIMS: usize = 8192;
/// Longest accepted scope name.
pub const MAX_SCOPE_CHARS: usize = 256;

/// Output format of `cmp_context`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The SMP envelope.
    Smp,
    /// The same pack without legend, with `warnings`.
    Json,
    /// Readable rendering for prompt pasting.
    Markdown,
}

/// What `items` carries when a session is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Send {
    /// Every packed memory.
    All,
    /// Only memories new to the session.
    Delta,
}

/// Parsed options.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Output format.
    pub format: Format,
    /// The clock (the caller's `now`, else the wall clock).
    pub now: Epoch,
    /// True when the caller gave `now` (needed for determinism guarantees).
    pub now_given: bool,
    /// Time travel point.
    pub as_of: Option<Epoch>,
    /// Owner namespace.
    pub scope: String,
    /// True when the caller gave `scope`.
    pub scope_given: bool,
    /// Pin the pack.
    pub pin: bool,
    /// User-supplied query embedding.
    pub query_embedding: Option<Vec<f32>>,
    /// Folder of an embedding model that embeds the task (instead of `query_embedding`).
    pub embedder: Option<String>,
    /// all | delta.
    pub send: Send,
    /// Full provenance in `why` and refs in `graph`.
    pub audit: bool,
    /// The long legend instead of the compact one.
    pub full_legend: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            format: Format::Smp,
            now: time::now(),
            now_given: false,
            as_of: None,
            scope: "default".into(),
            scope_given: false,
            pin: false,
            query_embedding: None,
            embedder: None,
            send: Send::All,
            audit: false,
            full_legend: false,
        }
    }
}

impl Options {
    /// Sets option `k` from its JSON value.
    fn set(&mut self, k: &str, v: &Value) -> Result<()> {
        match k {
            "format" => {
                let formats = [("smp", Format::Smp), ("json", Format::Json), ("markdown", Format::Markdown)];
                self.format = one_of("format", v, &formats, "one of smp, json, markdown")?;
            }
            "now" => {
                self.now = parse_time("now", v)?;
                self.now_given = true;
            }
            "as_of" => self.as_of = Some(parse_time("as_of", v)?),
            "scope" => {
                self.scope = parse_scope(v)?;
                self.scope_given = true;
            }
            "pin" => self.pin = boolean("pin", v)?,
            "send" => {
                self.send = one_of("send", v, &[("all", Send::All), ("delta", Send::Delta)], "\"all\" or \"delta\"")?
            }
            "audit" => self.audit = boolean("audit", v)?,
            "legend" => {
                self.full_legend =
                    one_of("legend", v, &[("compact", false), ("full", true)], "\"compact\" or \"full\"")?
            }
            "query_embedding" => self.query_embedding = Some(parse_embedding(v)?),
            "embedder" => match v.as_str() {
                Some(dir) if !dir.is_empty() => self.embedder = Some(dir.to_string()),
                _ => {
                    return Err(Error::invalid("embedder", format!("must be a model folder's path, got {}", short(v))))
                }
            },
            _ => return Err(Error::usage(format!("unknown option {k:?}"))),
        }
        Ok(())
    }

    /// The point in time the store is read at: `as_of` if given, else `now` ([`crate::time::horizon`]).
    pub fn horizon(&self) -> Epoch {
        crate::time::horizon(self.now, self.as_of)
    }
}

/// The clocks an option may name, in seconds since the epoch: 0000-01-01T00:00:00Z up to, not
/// including, 10000-01-01T00:00:00Z. [`time::format_precise`] writes an instant outside them with
/// a year [`time::parse`] refuses, so a query could not carry it in its cursor.
const CLOCK_RANGE: std::ops::Range<Epoch> = -62_167_219_200.0..253_402_300_800.0;

/// Parses an ISO-8601 option value: a timestamp whose UTC instant is within `CLOCK_RANGE`.
pub fn parse_time(field: &str, v: &Value) -> Result<Epoch> {
    match v {
        Value::String(s) => match time::parse(s) {
            Some(t) if CLOCK_RANGE.contains(&t) => Ok(t),
            Some(_) => {
                Err(Error::invalid(field, format!("must be within the years 0000 to 9999 once read in UTC, got {s:?}")))
            }
            None => Err(Error::invalid(field, format!("must be an ISO-8601 timestamp, got {s:?}"))),
        },
        other => Err(Error::invalid(field, format!("must be an ISO-8601 string, got {}", short(other)))),
    }
}

/// Parses a scope value.
pub fn parse_scope(v: &Value) -> Result<String> {
    match v {
        Value::String(s) if !s.is_empty() && s.chars().count() <= MAX_SCOPE_CHARS => Ok(s.clone()),
        Value::String(s) if s.is_empty() => Err(Error::invalid("scope", "must be a non-empty string")),
        Value::String(_) => Err(Error::invalid("scope", format!("must be at most {MAX_SCOPE_CHARS} characters"))),
        other => Err(Error::invalid("scope", format!("must be a string, got {}", short(other)))),
    }
}

/// A short rendering of a JSON value for error messages.
pub fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(59).collect::<String>())
    } else {
        s
    }
}

/// `text` as a JSON object for the argument `what` (options, mql): an error when it is not one, or
/// when one of its objects, at any depth, gives a key twice. serde_json would keep the last of a
/// repeated key and SQLite's JSON functions keep the first, so a caller that checks an object with
/// one (`json_extract(opts, '$.scope')`) would see another object than cmp reads.
pub fn json_object(text: &str, what: &str) -> Result<serde_json::Map<String, Value>> {
    let v = match serde_json::from_str::<Unique>(text) {
        Ok(Unique(v)) => v,
        Err(e) => return Err(Error::invalid(what, format!("must be a JSON object: {e}"))),
    };
    match v {
        Value::Object(map) => Ok(map),
        v => Err(Error::invalid(what, format!("must be a JSON object, got {}", short(&v)))),
    }
}

/// A JSON value in which no object gives a key twice ([`json_object`]).
struct Unique(Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Unique;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::Bool(b)))
    }
    fn visit_i64<E>(self, n: i64) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::from(n)))
    }
    fn visit_u64<E>(self, n: u64) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::from(n)))
    }
    fn visit_f64<E>(self, n: f64) -> std::result::Result<Unique, E> {
        Ok(Unique(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)))
    }
    fn visit_str<E>(self, s: &str) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::String(s.to_string())))
    }
    fn visit_string<E>(self, s: String) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::String(s)))
    }
    fn visit_unit<E>(self) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::Null))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Unique, A::Error> {
        let mut v = Vec::new();
        while let Some(Unique(x)) = seq.next_element()? {
            v.push(x);
        }
        Ok(Unique(Value::Array(v)))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Unique, A::Error> {
        let mut m = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if m.contains_key(&k) {
                return Err(serde::de::Error::custom(format!("key {k:?} given twice")));
            }
            let Unique(v) = map.next_value()?;
            m.insert(k, v);
        }
        Ok(Unique(Value::Object(m)))
    }
}

/// Parses `options`, accepting only the keys in `allowed`.
pub fn parse(text: Option<&str>, allowed: &[&str]) -> Result<Options> {
    let mut o = Options::default();
    let Some(text) = text else { return Ok(o) };
    let map = json_object(text, "options")?;
    for (k, v) in &map {
        if !allowed.contains(&k.as_str()) {
            return Err(Error::usage(format!("unknown option {k:?} (accepted: {})", allowed.join(", "))));
        }
        o.set(k, v)?;
    }
    if o.embedder.is_some() && o.query_embedding.is_some() {
        return Err(Error::usage("query_embedding and embedder do not go together: give one"));
    }
    Ok(o)
}

/// The value of `choices` that a string option names; `expected` says what was expected.
fn one_of<T: Copy>(field: &str, v: &Value, choices: &[(&str, T)], expected: &str) -> Result<T> {
    let named = v.as_str().and_then(|s| choices.iter().find(|c| c.0 == s));
    named.map(|c| c.1).ok_or_else(|| Error::invalid(field, format!("must be {expected}, got {}", short(v))))
}

/// A boolean option.
fn boolean(field: &str, v: &Value) -> Result<bool> {
    v.as_bool().ok_or_else(|| Error::invalid(field, format!("must be a boolean, got {}", short(v))))
}

impl Options {
    /// The embedding the vector retriever compares with: `query_embedding`, or `task` embedded by
    /// the model in `embedder`.
    pub fn task_embedding(&self, task: &str) -> Result<Option<std::borrow::Cow<'_, [f32]>>> {
        match &self.embedder {
            Some(dir) => {
                let embedder = crate::embed::Embedder::shared(std::path::Path::new(dir))?;
                Ok(Some(std::borrow::Cow::Owned(embedder.embed_cached(task))))
            }
            None => Ok(self.query_embedding.as_deref().map(std::borrow::Cow::Borrowed)),
        }
    }
}

fn parse_embedding(v: &Value) -> Result<Vec<f32>> {
    let Value::Array(a) = v else {
        return Err(Error::invalid("query_embedding", format!("must be an array of numbers, got {}", short(v))));
    };
    if a.is_empty() || a.len() > MAX_EMBEDDING_DIMS {
        return Err(Error::invalid(
            "query_embedding",
            format!("must have 1..{MAX_EMBEDDING_DIMS} numbers, got {}", a.len()),
        ));
    }
    let mut out = Vec::with_capacity(a.len());
    for (i, x) in a.iter().enumerate() {
        match x.as_f64() {
            Some(f) if f.is_finite() && (f as f32).is_finite() => out.push(f as f32),
            _ => {
                return Err(Error::invalid(
                    format!("query_embedding[{i}]"),
                    format!("must be a number a 32-bit float holds (|x| <= {:e}), got {}", f32::MAX, short(x)),
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: &[&str] = &["format", "now", "as_of", "scope", "pin", "query_embedding", "send"];

    #[test]
    fn a_json_object_keeps_every_value_and_refuses_a_repeated_key() {
        let text = r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":{"d":18446744073709551615}}"#;
        let map = json_object(text, "options").unwrap();
        assert_eq!(Value::Object(map), serde_json::from_str::<Value>(text).unwrap());
        assert!(json_object(r#"{"a":1,"b":{"a":2}}"#, "options").is_ok(), "one key per object");
        let e = json_object(r#"{"a":[{"k":1,"k":1}]}"#, "mql").unwrap_err().to_string();
        assert!(e.starts_with("mql must be a JSON object: key \"k\" given twice"), "{e}");
    }

    #[test]
    fn parses_and_rejects() {
        let o = parse(Some(r#"{"now":"2026-01-01","scope":"w","format":"json","pin":true}"#), ALL).unwrap();
        assert_eq!(o.scope, "w");
        assert!(o.pin && o.now_given);
        for (bad, want) in [
            ("[1]", "f: options must be a JSON object"),
            ("{", "f: options must be a JSON object"),
            (r#"{"nope":1}"#, "f: unknown option \"nope\""),
            (r#"{"now":"yesterday"}"#, "f: now must be an ISO-8601"),
            (r#"{"format":"xml"}"#, "f: format must be one of"),
            (r#"{"query_embedding":[1,"a"]}"#, "f: query_embedding[1] must be a number a 32-bit float holds"),
            (
                r#"{"query_embedding":[1e308]}"#,
                "f: query_embedding[0] must be a number a 32-bit float holds (|x| <= 3.4028235e38), got 1e+308",
            ),
            (r#"{"scope":""}"#, "f: scope must be a non-empty string"),
            (r#"{"scope":"a","scope":"b"}"#, "f: options must be a JSON object: key \"scope\" given twice"),
            (
                r#"{"query_embedding":[1],"why":{"x":1,"x":2}}"#,
                "f: options must be a JSON object: key \"x\" given twice",
            ),
        ] {
            let e = parse(Some(bad), ALL).unwrap_err().in_function("f").to_string();
            assert!(e.starts_with(want), "{bad}: {e}");
        }
    }
}
