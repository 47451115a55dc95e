//! Bearer tokens for the HTTP surface. A token is `cmpt_<id>_<secret>`: `id` (12 hex digits) names the
//! row, `secret` (32 random bytes, 64 hex digits) proves possession. The database keeps only the
//! SHA-256 of the secret, never the secret itself, and a presented secret is checked by comparing
//! hashes in constant time. Each token fixes one scope, and whether it may write (`remember`).

use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The table, created by `cmp-mcp` in the memory database on first use.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS cmp_mcp_tokens(
    id TEXT PRIMARY KEY,
    secret_sha256 BLOB NOT NULL,
    scope TEXT NOT NULL,
    read_only INTEGER NOT NULL DEFAULT 0,
    label TEXT,
    created_at TEXT NOT NULL,
    revoked_at TEXT
)";

const PREFIX: &str = "cmpt_";
const ID_HEX: usize = 12;
const SECRET_BYTES: usize = 32;

/// What a valid token grants to the request that carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The token's id (never its secret).
    pub token_id: String,
    /// The only scope the request can read or write.
    pub scope: String,
    /// True when the request may not write.
    pub read_only: bool,
}

/// A token as `token list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub id: String,
    pub scope: String,
    pub read_only: bool,
    pub label: Option<String>,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// Creates the token table if it is missing.
pub fn ensure_table(conn: &Connection) -> Result<(), String> {
    conn.execute(SCHEMA, []).map(|_| ()).map_err(|e| format!("cannot create cmp_mcp_tokens: {e}"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_hex(n: usize) -> Result<String, String> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).map_err(|e| format!("no randomness from the operating system: {e}"))?;
    Ok(hex(&buf))
}

fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

const NOW_SQL: &str = "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// Creates a token for `scope`; returns its id and the full token, which is shown once and stored
/// nowhere.
pub fn create(
    conn: &Connection,
    scope: &str,
    read_only: bool,
    label: Option<&str>,
) -> Result<(String, String), String> {
    if scope.trim().is_empty() {
        return Err("token create: --scope must not be empty".into());
    }
    ensure_table(conn)?;
    let id = random_hex(ID_HEX / 2)?;
    let secret = random_hex(SECRET_BYTES)?;
    let now: String = conn.query_row(NOW_SQL, [], |r| r.get(0)).map_err(|e| e.to_string())?;
    conn.execute(
        "INSERT INTO cmp_mcp_tokens(id, secret_sha256, scope, read_only, label, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![id, digest(&secret).to_vec(), scope, read_only, label, now],
    )
    .map_err(|e| format!("token create: {e}"))?;
    Ok((id.clone(), format!("{PREFIX}{id}_{secret}")))
}

/// Every token, newest first.
pub fn list(conn: &Connection) -> Result<Vec<Listed>, String> {
    ensure_table(conn)?;
    let mut st = conn
        .prepare(
            "SELECT id, scope, read_only, label, created_at, revoked_at FROM cmp_mcp_tokens ORDER BY created_at DESC, id",
        )
        .map_err(|e| e.to_string())?;
    let rows = st
        .query_map([], |r| {
            Ok(Listed {
                id: r.get(0)?,
                scope: r.get(1)?,
                read_only: r.get(2)?,
                label: r.get(3)?,
                created_at: r.get(4)?,
                revoked_at: r.get(5)?,
            })
        })
        .map_err(|e| e.to_string())?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(|e| e.to_string())
}

/// Revokes the token `id_or_token` (its id, or the whole token). False when no live token has it.
pub fn revoke(conn: &Connection, id_or_token: &str) -> Result<bool, String> {
    ensure_table(conn)?;
    let id = match split(id_or_token) {
        Some((id, _)) => id,
        None => id_or_token,
    };
    let now: String = conn.query_row(NOW_SQL, [], |r| r.get(0)).map_err(|e| e.to_string())?;
    let n = conn
        .execute("UPDATE cmp_mcp_tokens SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL", params![now, id])
        .map_err(|e| format!("token revoke: {e}"))?;
    Ok(n == 1)
}

/// Live (not revoked) tokens.
pub fn live_count(conn: &Connection) -> Result<i64, String> {
    ensure_table(conn)?;
    conn.query_row("SELECT count(*) FROM cmp_mcp_tokens WHERE revoked_at IS NULL", [], |r| r.get(0))
        .map_err(|e| e.to_string())
}

/// `cmpt_<id>_<secret>` → (id, secret), when the shape is right.
fn split(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.strip_prefix(PREFIX)?.split_once('_')?;
    let hex_of = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    (hex_of(id, ID_HEX) && hex_of(secret, SECRET_BYTES * 2)).then_some((id, secret))
}

/// The grant of a presented token; None when it is malformed, unknown, revoked or wrong. The secret
/// is hashed and compared in constant time whether or not the id exists.
pub fn verify(conn: &Connection, presented: &str) -> Result<Option<Grant>, String> {
    let Some((id, secret)) = split(presented) else {
        return Ok(None);
    };
    let row: Option<(Vec<u8>, String, bool, Option<String>)> = conn
        .query_row("SELECT secret_sha256, scope, read_only, revoked_at FROM cmp_mcp_tokens WHERE id = ?1", [id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()
        .map_err(|e| e.to_string())?;
    let given = digest(secret);
    let stored = row.as_ref().map_or([0u8; 32].to_vec(), |r| r.0.clone());
    let equal: bool = given.as_slice().ct_eq(stored.as_slice()).into();
    Ok(match row {
        Some((_, scope, read_only, None)) if equal => Some(Grant { token_id: id.to_string(), scope, read_only }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_verify_revoke() {
        let conn = Connection::open_in_memory().expect("open");
        let (id, token) = create(&conn, "work", true, Some("laptop")).expect("create");
        assert!(token.starts_with(&format!("cmpt_{id}_")), "{token}");
        let grant = verify(&conn, &token).expect("verify").expect("valid");
        assert_eq!(grant, Grant { token_id: id.clone(), scope: "work".into(), read_only: true });
        // The secret is not stored: only its hash is.
        let secret = token.rsplit('_').next().expect("secret");
        let stored: i64 = conn
            .query_row(
                "SELECT count(*) FROM cmp_mcp_tokens WHERE instr(hex(secret_sha256), upper(?1)) > 0 OR instr(coalesce(label, ''), ?1) > 0",
                [secret],
                |r| r.get(0),
            )
            .expect("query");
        assert_eq!(stored, 0);
        // A wrong secret with the right id, a malformed token, an unknown id: all refused.
        let wrong = format!("cmpt_{id}_{}", "0".repeat(64));
        assert_eq!(verify(&conn, &wrong).expect("verify"), None);
        assert_eq!(verify(&conn, "cmpt_x_y").expect("verify"), None);
        assert_eq!(verify(&conn, &format!("cmpt_{}_{}", "a".repeat(12), "b".repeat(64))).expect("verify"), None);
        assert_eq!(live_count(&conn).expect("count"), 1);
        assert!(revoke(&conn, &token).expect("revoke"));
        assert!(!revoke(&conn, &id).expect("revoke again"));
        assert_eq!(verify(&conn, &token).expect("verify"), None);
        assert_eq!(live_count(&conn).expect("count"), 0);
        let listed = list(&conn).expect("list");
        assert_eq!(listed.len(), 1);
        assert!(listed[0].revoked_at.is_some());
        assert!(create(&conn, " ", false, None).unwrap_err().contains("--scope"));
    }
}
