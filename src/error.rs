//! Errors. The core returns an [`Error`] that says what went wrong and names the offending field or
//! value; the SQL boundary (the scalar adapters in `lib.rs`, the table-valued functions in
//! `functions/table.rs`) wraps it in a [`FunctionError`] that adds the SQL function's name once, so
//! every message SQL shows reads `cmp_xxx: what went wrong`.

use std::fmt;

/// What went wrong in cmp's core. Its text never names the SQL function: [`Error::in_function`]
/// adds that at the boundary.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// SQLite failed while cmp read or wrote.
    Sql(rusqlite::Error),
    /// The function was called with the wrong number of arguments.
    Arity {
        /// What the function takes, e.g. `1 argument (model)`.
        usage: &'static str,
        /// How many it got.
        got: usize,
    },
    /// A named argument, option or MQL field holds a bad value: the text is `field msg` (`field: msg`
    /// when `msg` starts with a colon, for what is wrong with one element of a list).
    Invalid {
        /// The argument, option or field (`token_budget`, `query_embedding[3]`, …).
        field: String,
        /// What is wrong with it, e.g. `must be an integer, got text`.
        msg: String,
    },
    /// The call as a whole is malformed: an unknown option or field, a missing argument, options
    /// that do not go together.
    Usage(String),
    /// The cmp schema is missing, older or newer than this build.
    Schema(String),
    /// A cursor cannot be used: altered, truncated, foreign, of the other kind or another scope.
    Cursor(String),
    /// A session cannot be used: its stored state is corrupt, or concurrent turns kept winning.
    Session(String),
    /// The call must write (a session turn, a pin, the schema) but this connection cannot.
    Unwritable(String),
    /// The output cannot be fitted to the token budget.
    Budget(String),
    /// A write would contradict what is stored (a pin's sha denoting other bytes).
    Conflict(String),
    /// This SQLite lacks something cmp needs.
    Unsupported(String),
    /// Something that should not happen (a caught panic, an unkeyable hash).
    Internal(String),
}

impl Error {
    /// An [`Error::Invalid`]: `field msg`.
    pub fn invalid(field: impl Into<String>, msg: impl fmt::Display) -> Self {
        Error::Invalid { field: field.into(), msg: msg.to_string() }
    }

    /// An [`Error::Usage`].
    pub fn usage(msg: impl fmt::Display) -> Self {
        Error::Usage(msg.to_string())
    }

    /// What a panic inside a function becomes at the SQL boundary.
    pub fn panicked() -> Error {
        Error::Internal("internal error (panic caught); please report it".into())
    }

    /// This error as raised by the SQL function `function` (the text SQL shows).
    pub fn in_function(self, function: &'static str) -> FunctionError {
        FunctionError { function, error: self }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Sql(e) => e.fmt(f),
            Error::Arity { usage, got } => {
                write!(f, "takes {usage}, got {got} argument{}", if *got == 1 { "" } else { "s" })
            }
            Error::Invalid { field, msg } if msg.starts_with(':') => write!(f, "{field}{msg}"),
            Error::Invalid { field, msg } => write!(f, "{field} {msg}"),
            Error::Usage(m)
            | Error::Schema(m)
            | Error::Cursor(m)
            | Error::Session(m)
            | Error::Unwritable(m)
            | Error::Budget(m)
            | Error::Conflict(m)
            | Error::Unsupported(m)
            | Error::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Sql(e) => Some(e),
            _ => None,
        }
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Sql(e)
    }
}

/// Result type of the functional core.
pub type Result<T> = std::result::Result<T, Error>;

/// Longest error text passed to SQLite; a longer one is cut (see [`FunctionError`]'s `Display`).
const MAX_MESSAGE_BYTES: usize = 2048;

/// An [`Error`] raised by a cmp SQL function: its text is `function: error`. An SQLite error that is
/// itself a function's error (a cmp function called inside another's SQL) already names its
/// function and is shown as it is, never prefixed twice.
#[derive(Debug)]
pub struct FunctionError {
    /// The SQL function's name (`cmp_context`, …).
    pub function: &'static str,
    /// What went wrong.
    pub error: Error,
}

impl fmt::Display for FunctionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match &self.error {
            Error::Sql(rusqlite::Error::UserFunctionError(inner)) => inner.to_string(),
            e => format!("{}: {e}", self.function),
        };
        // SQLite takes the message as a C string: with a NUL byte in it (from a value the caller
        // gave) rusqlite could not pass it on and would raise a bare "constraint failed" instead.
        let text = text.replace('\0', "\\0");
        if text.len() <= MAX_MESSAGE_BYTES {
            return f.write_str(&text);
        }
        // A message quoting a huge value (or SQLite quoting a statement) is cut: the start names
        // the function and the field.
        let mut end = MAX_MESSAGE_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        write!(f, "{}… ({} bytes in all)", &text[..end], text.len())
    }
}

impl std::error::Error for FunctionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<FunctionError> for rusqlite::Error {
    fn from(e: FunctionError) -> Self {
        rusqlite::Error::UserFunctionError(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_function_name_is_added_once() {
        let e = Error::invalid("token_budget", "must be an integer, got text").in_function("cmp_context");
        assert_eq!(e.to_string(), "cmp_context: token_budget must be an integer, got text");
        let e = Error::Arity { usage: "1 argument (model)", got: 2 }.in_function("cmp_profile");
        assert_eq!(e.to_string(), "cmp_profile: takes 1 argument (model), got 2 arguments");
        let e = Error::Arity { usage: "no arguments", got: 1 }.in_function("cmp_init");
        assert_eq!(e.to_string(), "cmp_init: takes no arguments, got 1 argument");
        let e = Error::invalid("layers", ": unknown kind \"x\"").in_function("cmp_query");
        assert_eq!(e.to_string(), "cmp_query: layers: unknown kind \"x\"");
        // A nested function's error keeps its own name and is not prefixed again.
        let inner: rusqlite::Error = Error::usage("ref must not be NULL").in_function("cmp_expand").into();
        let outer = Error::from(inner).in_function("cmp_query");
        assert_eq!(outer.to_string(), "cmp_expand: ref must not be NULL");
        let sql = Error::from(rusqlite::Error::QueryReturnedNoRows).in_function("cmp_query");
        assert_eq!(sql.to_string(), format!("cmp_query: {}", rusqlite::Error::QueryReturnedNoRows));
    }

    #[test]
    fn a_long_message_is_cut_after_its_start() {
        let e =
            Error::invalid("layers", format!(": unknown kind \"{}\"", "é".repeat(100_000))).in_function("cmp_query");
        let text = e.to_string();
        assert!(text.starts_with("cmp_query: layers: unknown kind \"éé"), "{}", &text[..40]);
        assert!(text.len() < MAX_MESSAGE_BYTES + 40 && text.ends_with("bytes in all)"), "{}", text.len());
    }

    #[test]
    fn a_nul_byte_in_a_message_is_written_out() {
        // SQLite takes the message as a C string; rusqlite would otherwise raise "constraint failed".
        let e = Error::invalid("embedder", "cannot open \"a\0b\"").in_function("cmp_embed");
        assert_eq!(e.to_string(), "cmp_embed: embedder cannot open \"a\\0b\"");
    }

    #[test]
    fn scalars_name_themselves_in_arity_errors_and_in_errors_that_quote_a_nul_byte() {
        let conn = rusqlite::Connection::open_in_memory().expect("open");
        crate::register(&conn).expect("register");
        let err = |sql: &str| conn.query_row(sql, [], |_| Ok(())).expect_err(sql).to_string();
        assert_eq!(err("SELECT cmp_version(1)"), "cmp_version: takes no arguments, got 1 argument");
        assert_eq!(err("SELECT cmp_debug(1, 2)"), "cmp_debug: takes no arguments, got 2 arguments");
        assert!(err("SELECT cmp_embed('atlas', 'a' || char(0) || 'b')").starts_with("cmp_embed: "));
        assert!(err("SELECT cmp_context('atlas', NULL, NULL, NULL, '{\"embedder\":\"x\\u0000y\"}')")
            .starts_with("cmp_context: "));
    }
}
