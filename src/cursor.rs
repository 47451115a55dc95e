//! Tamper-evident cursors (**ours**, FACTS.md "MQL"): a cursor is a base64url JSON payload of call
//! parameters (never memory content) and an HMAC-SHA256 tag keyed with a per-database secret that
//! `cmp_init()` creates. A forged, altered, truncated or foreign-database cursor fails to verify and
//! is an error, never a wider read.

use crate::error::{fail, Result};
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

fn mac(conn: &Connection, func: &str) -> Result<Hmac<Sha256>> {
    let Some(secret) = crate::store::meta(conn, "secret") else {
        return fail(func, "the cmp schema is missing; run SELECT cmp_init() first");
    };
    Hmac::<Sha256>::new_from_slice(secret.as_bytes()).or_else(|_| fail(func, "cannot key the cursor hash"))
}

/// Signs `payload` as a cursor with `prefix`.
pub fn sign(conn: &Connection, func: &str, prefix: &str, payload: &Value) -> Result<String> {
    let body = B64.encode(payload.to_string());
    let mut m = mac(conn, func)?;
    m.update(prefix.as_bytes());
    m.update(body.as_bytes());
    let tag = B64.encode(m.finalize().into_bytes());
    Ok(format!("{prefix}{body}.{tag}"))
}

/// Verifies a cursor and returns (prefix, payload).
pub fn verify(conn: &Connection, func: &str, cursor: &str) -> Result<(&'static str, Value)> {
    let bad = || fail(func, "cursor is invalid: it was altered, truncated, or issued by another database");
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
    let mut m = mac(conn, func)?;
    m.update(prefix.as_bytes());
    m.update(body.as_bytes());
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
