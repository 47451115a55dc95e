//! Which memory rows a read may see, written once as SQL conditions over `cmp_memories AS m` and
//! reused by every read: retrieval, MQL, expand and session turns. A row is *eligible* when it is in
//! the reader's scope, has a text id (a ref a caller can cite and expand), is not redacted and is
//! not superseded at the reader's horizon; it is *visible* when it was captured at or before the
//! horizon.

/// SQL: the row (alias `m`) is not redacted. Anything but 0 or NULL, also a text or a real, counts
/// as redacted.
macro_rules! not_redacted {
    () => {
        "(m.redacted = 0 OR m.redacted IS NULL)"
    };
}

/// SQL (parameter `:h`, the horizon as a Julian day): the row (alias `m`) is superseded at the
/// horizon. A `superseded_by` that names no row (a dangling id) does not supersede; a `superseded_at`
/// that is NULL or not a date supersedes at every horizon.
macro_rules! superseded {
    () => {
        "(m.superseded_by IS NOT NULL AND NOT coalesce(julianday(m.superseded_at) > :h, 0) \
          AND EXISTS (SELECT 1 FROM main.cmp_memories AS s WHERE s.id = m.superseded_by))"
    };
}

/// SQL: the row (alias `m`) is redacted (the negation of [`NOT_REDACTED`]).
pub const REDACTED: &str = concat!("NOT ", not_redacted!());
/// SQL: the row (alias `m`) is not redacted.
pub const NOT_REDACTED: &str = not_redacted!();
/// SQL (parameter `:h`): the row (alias `m`) is superseded at the horizon.
pub const SUPERSEDED: &str = superseded!();

/// SQL: the row (alias `m`) has a text id. A blob id (TEXT affinity keeps blobs as they are) has no
/// text a caller could cite or expand, and two such rows would read as one ref: never read.
macro_rules! text_id {
    () => {
        "typeof(m.id) = 'text'"
    };
}

/// SQL condition (table alias `m`, parameters `:scope`, `:h` = horizon as a Julian day) for a row
/// that may be read: in scope, with a text id, not redacted, not superseded at the horizon.
pub const ELIGIBLE: &str =
    concat!("m.scope = :scope AND ", text_id!(), " AND ", not_redacted!(), " AND NOT ", superseded!());
/// [`ELIGIBLE`] without the supersession test (MQL with `valid_only: false` narrows afterwards). It
/// names `:h` too, so both conditions bind the same parameters.
pub const ELIGIBLE_ANY_VERSION: &str =
    concat!("m.scope = :scope AND ", text_id!(), " AND ", not_redacted!(), " AND :h IS NOT NULL");
/// SQL: the row (alias `m`) is not queued, so what the indexes hold for its rid is its own text. A
/// queued rid's entries may be those of the text it had, or of a row a REPLACE deleted, until the
/// queue is indexed (`store::pending`): a match in an index counts only for a row that is not queued
/// (queued rows are read directly).
pub const INDEXED: &str = "m.rid NOT IN (SELECT rid FROM main.cmp_pending)";
/// SQL condition for a row already captured at the horizon (unparseable timestamps count as visible).
pub const VISIBLE: &str = "coalesce(julianday(m.captured_at) <= :h, 1)";

/// Who reads: one scope, at one horizon, with or without superseded rows. Every read of memories
/// binds `:scope` and `:h` from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reader<'a> {
    /// Owner namespace.
    pub scope: &'a str,
    /// The horizon as a Julian day.
    pub h: f64,
    /// Also read rows superseded at the horizon.
    pub any_version: bool,
}

impl Reader<'_> {
    /// The eligibility condition of this reader.
    pub fn eligible(&self) -> &'static str {
        if self.any_version {
            ELIGIBLE_ANY_VERSION
        } else {
            ELIGIBLE
        }
    }
}
