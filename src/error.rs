//! Errors that reach SQL. Every message starts with the SQL function's name, names the offending
//! field or value, and says what would be accepted (docs/reference.md, "Errors").

use std::fmt;

/// An error raised by a cmp SQL function; its text is the SQL error message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmpError(pub String);

impl fmt::Display for CmpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CmpError {}

/// Result type of the functional core.
pub type Result<T> = std::result::Result<T, CmpError>;

impl CmpError {
    /// `func: message`.
    pub fn new(func: &str, msg: impl fmt::Display) -> Self {
        CmpError(format!("{func}: {msg}"))
    }

    /// Wraps an SQLite error met while `func` ran.
    pub fn sql(func: &str, e: rusqlite::Error) -> Self {
        match e {
            rusqlite::Error::UserFunctionError(inner) => CmpError(inner.to_string()),
            other => CmpError(format!("{func}: {other}")),
        }
    }
}

impl From<CmpError> for rusqlite::Error {
    fn from(e: CmpError) -> Self {
        rusqlite::Error::UserFunctionError(Box::new(e))
    }
}

/// Shorthand for `Err(CmpError::new(func, msg))`.
pub fn fail<T>(func: &str, msg: impl fmt::Display) -> Result<T> {
    Err(CmpError::new(func, msg))
}
