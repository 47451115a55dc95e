//! `cmp_search(task [, options])`: the fused retrieval candidates with their why, as rows.

use super::args;
use super::table::TableFn;
use crate::error::{Error, Result};
use crate::options;
use crate::retrieve::{self, Query};
use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;
use serde::Serialize;
use std::ffi::{c_int, CStr};

/// Options `cmp_search` accepts.
pub const OPTIONS: &[&str] = &["now", "as_of", "scope", "query_embedding", "embedder"];

/// A row's `why` column, serialised in this field order: `{"retrievers": [...], "matched_terms":
/// [...], "fused_rank": n or null}`.
#[derive(Serialize)]
struct Why<'a> {
    retrievers: Vec<&'static str>,
    matched_terms: &'a [String],
    fused_rank: Option<usize>,
}

/// The `cmp_search` table-valued function.
pub struct Search;

impl TableFn for Search {
    const NAME: &'static str = "cmp_search";
    const SCHEMA: &'static CStr = c"CREATE TABLE x(ref, content, kind, relevance, relevance_basis, why, fused_rank, occurred_at, entities, task HIDDEN, options HIDDEN)";
    const COLUMNS: c_int = 9;
    const ARGS: usize = 2;
    const KEEPS_STATEMENTS: bool = true;

    fn rows(conn: &Connection, a: &[Option<ValueRef<'_>>]) -> Result<Vec<Vec<Value>>> {
        let task = match a[0] {
            Some(v) => args::text_value("task", v)?.unwrap_or_default(),
            None => return Err(Error::usage("task is required: SELECT * FROM cmp_search('your task')")),
        };
        let opts_text = match a[1] {
            Some(v) => args::text_value("options", v)?,
            None => None,
        };
        let o = options::parse(opts_text.as_deref(), OPTIONS)?;
        super::ready(conn)?;
        let mut q = Query::new(&task, &o.scope, o.horizon());
        let task_embedding = o.task_embedding(&task)?;
        q.query_embedding = task_embedding.as_deref();
        let r = retrieve::retrieve(conn, &q)?;
        Ok(r.candidates
            .into_iter()
            .map(|c| {
                let why = Why {
                    retrievers: c.retrievers.iter().map(|r| r.name()).collect(),
                    matched_terms: &c.matched_terms,
                    fused_rank: c.fused_rank,
                };
                vec![
                    Value::Text(c.mem.id),
                    Value::Text(c.mem.content),
                    Value::Text(c.mem.kind),
                    c.relevance.map_or(Value::Null, Value::Real),
                    c.basis.map_or(Value::Null, |b| Value::Text(b.name().into())),
                    Value::Text(serde_json::to_string(&why).unwrap_or_default()),
                    c.fused_rank.map_or(Value::Null, |r| Value::Integer(r as i64)),
                    Value::Text(c.mem.occurred_at.unwrap_or(c.mem.captured_at)),
                    Value::Text(serde_json::to_string(&c.mem.entities).unwrap_or_else(|_| "[]".into())),
                ]
            })
            .collect())
    }
}
