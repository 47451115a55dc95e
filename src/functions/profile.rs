//! `cmp_profile(model)` and `cmp_tokens(text [, model])`: pure functions of their arguments.

use super::args;
use crate::error::Result;
use crate::profile;
use rusqlite::functions::Context;

/// `cmp_profile(model)`: the resolved ModelProfile as JSON.
pub fn profile(ctx: &Context<'_>) -> Result<String> {
    args::arity(ctx, 1, 1, "1 argument (model)")?;
    let model = args::opt_text(ctx, 0, "model")?;
    Ok(profile::resolve(model.as_deref()).to_json().to_string())
}

/// `cmp_tokens(text [, model])`: the tokens of `text` as the packer counts them for that model
/// (exact for gpt-family models, the calibrated estimate otherwise).
pub fn tokens(ctx: &Context<'_>) -> Result<i64> {
    args::arity(ctx, 1, 2, "1 or 2 arguments (text [, model])")?;
    let text = args::opt_text(ctx, 0, "text")?.unwrap_or_default();
    let model = args::opt_text(ctx, 1, "model")?;
    let p = profile::resolve(model.as_deref());
    Ok(crate::tokens::Counter::for_model(model.as_deref(), p.name).count(&text) as i64)
}
