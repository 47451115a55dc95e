//! Argument decoding shared by the SQL adapters: every type mismatch is an error naming the function
//! and the argument.

use crate::error::{fail, Result};
use rusqlite::functions::Context;
use rusqlite::types::ValueRef;

/// Longest accepted task / text argument, in bytes (1 MiB). Longer input is an error, so time and
/// memory per call stay bounded.
pub const MAX_TEXT_BYTES: usize = 1 << 20;

fn type_name(v: &ValueRef<'_>) -> &'static str {
    match v {
        ValueRef::Null => "NULL",
        ValueRef::Integer(_) => "an integer",
        ValueRef::Real(_) => "a real",
        ValueRef::Text(_) => "text",
        ValueRef::Blob(_) => "a blob",
    }
}

/// Decodes a text value (NULL ⇒ None).
pub fn text_value(func: &str, name: &str, v: ValueRef<'_>) -> Result<Option<String>> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Text(b) => {
            if b.len() > MAX_TEXT_BYTES {
                return fail(func, format!("{name} is {} bytes; the limit is {MAX_TEXT_BYTES}", b.len()));
            }
            match std::str::from_utf8(b) {
                Ok(s) => Ok(Some(s.to_string())),
                Err(_) => fail(func, format!("{name} must be valid UTF-8 text")),
            }
        }
        other => fail(func, format!("{name} must be text, got {}", type_name(&other))),
    }
}

/// Argument `i` as optional text; absent arguments are None.
pub fn opt_text(ctx: &Context<'_>, func: &str, i: usize, name: &str) -> Result<Option<String>> {
    if i >= ctx.len() {
        return Ok(None);
    }
    text_value(func, name, ctx.get_raw(i))
}

/// Decodes an integer value (NULL ⇒ None); reals, text and blobs are errors.
pub fn int_value(func: &str, name: &str, v: ValueRef<'_>) -> Result<Option<i64>> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(n) => Ok(Some(n)),
        ValueRef::Real(f) => fail(func, format!("{name} must be an integer, got {f}")),
        other => fail(func, format!("{name} must be an integer, got {}", type_name(&other))),
    }
}

/// Argument `i` as an optional integer.
pub fn opt_int(ctx: &Context<'_>, func: &str, i: usize, name: &str) -> Result<Option<i64>> {
    if i >= ctx.len() {
        return Ok(None);
    }
    int_value(func, name, ctx.get_raw(i))
}

/// Checks the argument count.
pub fn arity(ctx: &Context<'_>, func: &str, min: usize, max: usize, usage: &str) -> Result<()> {
    let n = ctx.len();
    if n < min || n > max {
        return fail(func, format!("takes {usage}, got {n} argument{}", if n == 1 { "" } else { "s" }));
    }
    Ok(())
}
