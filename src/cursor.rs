//! Tamper-evident cursors: a cursor is a payload of call parameters (never memory content) and an
//! HMAC-SHA256 tag keyed with a per-database secret that `cmp_init()` creates. An MQL cursor
//! (`mqlc:`) carries base64url JSON and the whole tag; a pack cursor (`cmpc:`) rides in the envelope
//! the model reads, so it carries its fields as plain text joined by `|` and a 96-bit tag. A forged, altered, truncated or foreign-database cursor fails to verify and
//! is an error, never a wider read.

use crate::error::{Error, Result};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use rusqlite::Connection;
use serde_json::Value;
use sha2::Sha256;

/// Prefix of an MQL result cursor.
pub const MQL_PREFIX: &str = "mqlc:";
/// Prefix of a pack (cmp_context) cursor.
pub const PACK_PREFIX: &str = "cmpc:";
/// Longest cursor accepted, in bytes.
pub const MAX_CURSOR_BYTES: usize = 256 * 1024;

fn mac(conn: &Connection) -> Result<Hmac<Sha256>> {
    let Some(secret) = crate::store::meta(conn, "secret") else {
        return Err(Error::Schema("the cmp schema is missing; run SELECT cmp_init() first".into()));
    };
    Hmac::<Sha256>::new_from_slice(secret.as_bytes()).map_err(|_| Error::Internal("cannot key the cursor hash".into()))
}

/// The fields of a pack cursor, in their order in its body.
const PACK_FIELDS: [&str; 8] = ["now", "as_of", "budget", "offset", "scope", "model", "query_embedding", "task"];

/// Starts the embedding field of a pack cursor that holds the `embedder` option's folder instead of
/// an embedding (base64 never starts so).
const EMBEDDER_MARK: char = '@';

/// Bytes of a pack cursor's tag: 96 bits of HMAC-SHA256 (forging one takes 2^96 tries).
const PACK_TAG_BYTES: usize = 12;

/// Most tokens a pack cursor's tag adds to an output, by any counter: its 16 base64 characters are
/// at most 16 byte-pair tokens plus one where the tag meets what follows, or at most 16 pieces of
/// the estimate at 1.12 each (measured over random tags: 17 at most, 11 typically). The tag is
/// keyed per database, so budgeting counts this bound instead of the tag itself: the same store
/// packs the same items in every database.
pub const PACK_TAG_TOKENS: usize = 18;

/// A pack cursor without its tag (up to and including the `.` before it).
pub fn untagged(cursor: &str) -> &str {
    cursor.rfind('.').map_or(cursor, |i| &cursor[..=i])
}

/// `~` and `|` escaped (`~~`, `~p`), and every control character and line or paragraph separator
/// as `~u` and six hex digits: a cursor is one line of text wherever it is shown.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '~' => out.push_str("~~"),
            '|' => out.push_str("~p"),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => out.push_str(&format!("~u{:06x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '~' {
            match it.next()? {
                '~' => out.push('~'),
                'p' => out.push('|'),
                'u' => {
                    let hex: String = (0..6).map(|_| it.next()).collect::<Option<String>>()?;
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// A pack cursor body: its fields as plain text joined by `|` (a pack cursor rides inside the
/// envelope the model reads, where base64 JSON would cost three times the tokens). Numbers and
/// strings as JSON scalars would write them, null as the empty field; the embedding as base64 of its
/// little-endian float32s.
fn pack_body(payload: &Value) -> String {
    let field = |k: &str| -> String {
        if let (true, Some(dir)) = (k == "query_embedding", payload["embedder"].as_str()) {
            return format!("{EMBEDDER_MARK}{}", escape(dir));
        }
        match &payload[k] {
            Value::Null => String::new(),
            Value::String(s) => escape(s),
            Value::Array(a) => {
                let bytes: Vec<u8> = a.iter().flat_map(|x| (x.as_f64().unwrap_or(0.0) as f32).to_le_bytes()).collect();
                B64.encode(bytes)
            }
            // Whole seconds print without a fraction: "1780272000", not "1780272000.0".
            Value::Number(n) => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
                _ => n.to_string(),
            },
            other => other.to_string(),
        }
    };
    let mut body = PACK_FIELDS.iter().map(|k| field(k)).collect::<Vec<_>>().join("|");
    // After the task (which holds no raw `|`): how the first page was rendered, when it was not the
    // default SMP envelope, so the next pages are cut from the same pack.
    if let Some(layout) = payload["layout"].as_str().filter(|l| !l.is_empty()) {
        body.push('|');
        body.push_str(&escape(layout));
    }
    body
}

fn parse_pack_body(body: &str) -> Option<Value> {
    let parts: Vec<&str> = body.splitn(PACK_FIELDS.len(), '|').collect();
    if parts.len() != PACK_FIELDS.len() {
        return None;
    }
    let num = |s: &str| -> Option<Value> {
        if s.is_empty() {
            return Some(Value::Null);
        }
        serde_json::from_str::<Value>(s).ok().filter(Value::is_number)
    };
    let text = |s: &str| -> Option<Value> { unescape(s).map(Value::String) };
    let (mut qe, mut embedder) = (Value::Null, Value::Null);
    if let Some(dir) = parts[6].strip_prefix(EMBEDDER_MARK) {
        embedder = text(dir)?;
    } else if !parts[6].is_empty() {
        let bytes = B64.decode(parts[6]).ok()?;
        let v: Vec<Value> = bytes
            .chunks_exact(4)
            .map(|c| serde_json::json!(f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64))
            .collect();
        qe = Value::Array(v);
    }
    let model = if parts[5].is_empty() { Value::Null } else { text(parts[5])? };
    let (task, layout) = match parts[7].rsplit_once('|') {
        Some((task, layout)) => (task, Some(text(layout)?)),
        None => (parts[7], None),
    };
    let mut v = serde_json::json!({
        "now": num(parts[0])?,
        "as_of": num(parts[1])?,
        "budget": num(parts[2])?,
        "offset": num(parts[3])?,
        "scope": text(parts[4])?,
        "model": model,
        "query_embedding": qe,
        "embedder": embedder,
        "task": text(task)?,
    });
    if let Some(layout) = layout {
        v["layout"] = layout;
    }
    Some(v)
}

/// Signs `payload` as a cursor with `prefix`.
pub fn sign(conn: &Connection, prefix: &str, payload: &Value) -> Result<String> {
    if prefix == PACK_PREFIX {
        let body = pack_body(payload);
        let mut m = mac(conn)?;
        m.update(prefix.as_bytes());
        m.update(body.as_bytes());
        let tag = B64.encode(&m.finalize().into_bytes()[..PACK_TAG_BYTES]);
        return Ok(format!("{prefix}{body}.{tag}"));
    }
    let body = B64.encode(payload.to_string());
    let mut m = mac(conn)?;
    m.update(prefix.as_bytes());
    m.update(body.as_bytes());
    let tag = B64.encode(m.finalize().into_bytes());
    Ok(format!("{prefix}{body}.{tag}"))
}

/// Verifies a cursor and returns (prefix, payload).
pub fn verify(conn: &Connection, cursor: &str) -> Result<(&'static str, Value)> {
    let bad =
        || Err(Error::Cursor("cursor is invalid: it was altered, truncated, or issued by another database".into()));
    if cursor.len() > MAX_CURSOR_BYTES {
        return bad();
    }
    let prefix = if cursor.starts_with(MQL_PREFIX) {
        MQL_PREFIX
    } else if cursor.starts_with(PACK_PREFIX) {
        PACK_PREFIX
    } else {
        return bad();
    };
    let rest = &cursor[prefix.len()..];
    let Some((body, tag)) = rest.rsplit_once('.') else {
        return bad();
    };
    let Ok(tag) = B64.decode(tag) else {
        return bad();
    };
    let mut m = mac(conn)?;
    m.update(prefix.as_bytes());
    m.update(body.as_bytes());
    if prefix == PACK_PREFIX {
        if tag.len() != PACK_TAG_BYTES || m.verify_truncated_left(&tag).is_err() {
            return bad();
        }
        return match parse_pack_body(body) {
            Some(v) => Ok((prefix, v)),
            None => bad(),
        };
    }
    if m.verify_slice(&tag).is_err() {
        return bad();
    }
    let Ok(bytes) = B64.decode(body) else {
        return bad();
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v @ Value::Object(_)) => Ok((prefix, v)),
        _ => bad(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use serde_json::json;

    /// A database with only what cursors need: the per-database secret.
    fn db(secret: &str) -> Result<Connection> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch("CREATE TABLE cmp_meta(key TEXT PRIMARY KEY, value TEXT)")?;
        conn.execute("INSERT INTO main.cmp_meta VALUES ('secret', ?1)", [secret])?;
        Ok(conn)
    }

    fn pack_payload() -> Value {
        json!({"now": 1780272000.5, "as_of": null, "budget": 1200, "offset": 8, "scope": "team|a~b",
            "model": "claude", "query_embedding": [0.5, -1.0], "task": "when | does ~atlas ship?"})
    }

    fn is_invalid(r: Result<(&'static str, Value)>) -> bool {
        matches!(r, Err(Error::Cursor(m)) if m == "cursor is invalid: it was altered, truncated, or issued by another database")
    }

    #[test]
    fn cursors_round_trip() -> Result<()> {
        let conn = db("s1")?;
        let mql = json!({"mql": {"find": "atlas", "offset": 8}});
        let c = sign(&conn, MQL_PREFIX, &mql)?;
        assert!(c.starts_with(MQL_PREFIX));
        assert_eq!(verify(&conn, &c)?, (MQL_PREFIX, mql));
        let p = pack_payload();
        let c = sign(&conn, PACK_PREFIX, &p)?;
        assert!(c.starts_with("cmpc:1780272000.5||1200|8|team~pa~~b|claude|"), "{c}");
        let mut back = p.clone();
        back["embedder"] = Value::Null;
        assert_eq!(verify(&conn, &c)?, (PACK_PREFIX, back));
        // The embedder option's folder rides in the embedding's field, marked.
        let mut p = pack_payload();
        p["query_embedding"] = Value::Null;
        p["embedder"] = json!("/models/mini|lm~");
        let c = sign(&conn, PACK_PREFIX, &p)?;
        assert!(c.contains("|claude|@/models/mini~plm~~|when"), "{c}");
        assert_eq!(verify(&conn, &c)?, (PACK_PREFIX, p));
        Ok(())
    }

    #[test]
    fn altered_truncated_and_foreign_cursors_are_refused() -> Result<()> {
        let conn = db("s1")?;
        for prefix in [MQL_PREFIX, PACK_PREFIX] {
            let payload = if prefix == PACK_PREFIX { pack_payload() } else { json!({"mql": {"find": "x"}}) };
            let c = sign(&conn, prefix, &payload)?;
            let (body, tag) = c.rsplit_once('.').expect("a signed cursor has a tag");
            let flipped = format!("{}{}", &body[..body.len() - 1], if body.ends_with('A') { 'B' } else { 'A' });
            for bad in [
                format!("{flipped}.{tag}"),
                c[..c.len() - 2].to_string(),
                body.to_string(),
                format!("{body}.{tag}="),
                c.replacen(prefix, if prefix == MQL_PREFIX { PACK_PREFIX } else { MQL_PREFIX }, 1),
                format!("xyz:{}", &c[prefix.len()..]),
                String::new(),
            ] {
                assert!(is_invalid(verify(&conn, &bad)), "{bad}");
            }
            assert!(is_invalid(verify(&db("s2")?, &c)), "another database's secret");
        }
        assert!(is_invalid(verify(&conn, &format!("{MQL_PREFIX}{}", "a".repeat(MAX_CURSOR_BYTES)))));
        Ok(())
    }

    #[test]
    fn a_database_without_the_schema_has_no_cursors() -> Result<()> {
        let conn = Connection::open_in_memory()?;
        assert!(matches!(sign(&conn, MQL_PREFIX, &json!({})), Err(Error::Schema(_))));
        assert!(matches!(verify(&conn, "mqlc:e30.AAAA"), Err(Error::Schema(_))));
        Ok(())
    }

    #[test]
    fn pack_fields_escape_their_separator() {
        for s in ["", "a|b", "a~b", "~p", "||~~", "ünïcode|~"] {
            assert_eq!(unescape(&escape(s)).as_deref(), Some(s));
            assert!(!escape(s).contains('|'));
        }
        assert_eq!(unescape("~x"), None);
        assert_eq!(unescape("dangling~"), None);
    }

    use crate::tokens::Counter;

    /// Whatever the database's key, a tag adds at most [`PACK_TAG_TOKENS`] to an output.
    #[test]
    fn a_tag_costs_at_most_its_bound() {
        let bodies = ["cmpc:2025-01-01T00:00:00Z||1000|0||gpt||when did Melanie paint a sunrise?", "cmpc:|||0|||x"];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut tag = [0u8; PACK_TAG_BYTES];
            for b in &mut tag {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *b = seed as u8;
            }
            let tag = B64.encode(tag);
            for body in bodies {
                let with = format!("\"cursor\":\"{body}.{tag}\",\n");
                let without = format!("\"cursor\":\"{body}.\",\n");
                for c in [Counter::O200k, Counter::Cl100k, Counter::Estimate] {
                    let (a, b) = (c.count(&with), c.count(&without));
                    assert!(a <= b + PACK_TAG_TOKENS, "{c:?}: {tag} adds {} tokens", a - b);
                }
                assert_eq!(untagged(&format!("{body}.{tag}")), format!("{body}."));
            }
        }
    }
}
