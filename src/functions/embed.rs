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
    let Some(dir) = args::opt_text(ctx, 1, "embedder")? else {
        return Err(Error::invalid("embedder", "must be a model folder's path, got NULL"));
    };
    let Some(text) = args::opt_text(ctx, 0, "text")? else { return Ok(Value::Null) };
    Ok(Value::Blob(to_blob(&Embedder::shared(std::path::Path::new(&dir))?.embed(&text))))
}
