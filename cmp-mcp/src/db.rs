//! The one SQLite connection the server owns. A rusqlite `Connection` is `Send` but not `Sync`, so it
//! lives behind a std `Mutex`, and every use runs on tokio's blocking pool: a slow pack never stalls
//! the stdio loop, and calls are serialised exactly as they would be on one connection anyway.

use rusqlite::Connection;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a call waits for another process's write lock before failing with "database is locked".
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A shared handle on the connection.
#[derive(Clone)]
pub struct Db(Arc<Mutex<Connection>>);

impl Db {
    /// Opens (creating if needed) the database, registers cmp and applies its schema.
    pub fn open(path: &Path) -> Result<Db, String> {
        let conn = Connection::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| e.to_string())?;
        cmp::register(&conn).map_err(|e| e.to_string())?;
        conn.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(|e| e.to_string())?;
        Ok(Db(Arc::new(Mutex::new(conn))))
    }

    /// Runs `f` with exclusive use of the connection, off the async threads. A panic in `f` becomes
    /// an error message, never the end of the server.
    pub async fn call<T, F>(&self, f: F) -> Result<T, String>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, String> + Send + 'static,
    {
        let db = self.0.clone();
        let job = move || {
            // A panic cannot leave the connection mid-statement (rusqlite finalises on unwind, and a
            // transaction rolls back on drop), so a poisoned lock is still safe to use.
            let mut conn = db.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            f(&mut conn)
        };
        match tokio::task::spawn_blocking(job).await {
            Ok(v) => v,
            Err(e) => Err(format!("cmp-mcp: internal error: {e}")),
        }
    }
}
