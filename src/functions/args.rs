//! Argument decoding shared by the SQL adapters: every type mismatch is an error naming the argument
//! (the SQL boundary adds the function's name).

use crate::error::{Error, Result};
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
pub fn text_value(name: &str, v: ValueRef<'_>) -> Result<Option<String>> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Text(b) => {
            if b.len() > MAX_TEXT_BYTES {
                return Err(Error::invalid(name, format!("is {} bytes; the limit is {MAX_TEXT_BYTES}", b.len())));
            }
            match std::str::from_utf8(b) {
                Ok(s) => Ok(Some(s.to_string())),
                Err(_) => Err(Error::invalid(name, "must be valid UTF-8 text")),
            }
        }
        other => Err(Error::invalid(name, format!("must be text, got {}", type_name(&other)))),
    }
}

/// Argument `i` as optional text; absent arguments are None.
pub fn opt_text(ctx: &Context<'_>, i: usize, name: &str) -> Result<Option<String>> {
    if i >= ctx.len() {
        return Ok(None);
    }
    text_value(name, ctx.get_raw(i))
}

/// Decodes an integer value (NULL ⇒ None); reals, text and blobs are errors.
pub fn int_value(name: &str, v: ValueRef<'_>) -> Result<Option<i64>> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(n) => Ok(Some(n)),
        ValueRef::Real(f) => Err(Error::invalid(name, format!("must be an integer, got {f:?}"))),
        other => Err(Error::invalid(name, format!("must be an integer, got {}", type_name(&other)))),
    }
}

/// Argument `i` as an optional integer.
pub fn opt_int(ctx: &Context<'_>, i: usize, name: &str) -> Result<Option<i64>> {
    if i >= ctx.len() {
        return Ok(None);
    }
    int_value(name, ctx.get_raw(i))
}

/// Checks the argument count.
pub fn arity(ctx: &Context<'_>, min: usize, max: usize, usage: &'static str) -> Result<()> {
    let n = ctx.len();
    if n < min || n > max {
        return Err(Error::Arity { usage, got: n });
    }
    Ok(())
}
