//! cmp_embed.

use super::args;
use crate::embed::{to_blob, Embedder};
use crate::error::{Error, Result};
use rusqlite::functions::Context;
use rusqlite::types::Value;

/// `cmp_embed(text, embedder)`: `text` embedded by the sentence-transformers model in the folder
/// `embedder`, as the float32 little-endian blob `cmp_memories.embedding` holds; NULL for NULL text.
pub fn embed(ctx: &Context<'_>) -> Result<Value> {
    args::arity(ctx, 2, 2, "2 arguments (text, embedder)")?;
    let dir = match args::opt_text(ctx, 1, "embedder")? {
        Some(dir) if !dir.is_empty() => dir,
        given => {
            let got = if given.is_some() { "an empty string" } else { "NULL" };
            return Err(Error::invalid("embedder", format!("must be a model folder's path, got {got}")));
        }
    };
    let Some(text) = args::opt_text(ctx, 0, "text")? else { return Ok(Value::Null) };
    Ok(Value::Blob(to_blob(&Embedder::shared(std::path::Path::new(&dir))?.embed(&text))))
}
