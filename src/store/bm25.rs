//! `cmp_bm25`: FTS5's own `bm25()`, computed the same way to the last bit, with each row's length in
//! tokens kept in memory between calls.
//!
//! FTS5 ranks a match by BM25, which needs every matching row's length; `bm25()` reads it from the
//! index's `_docsize` table, one B-tree descent per matching row. An OR of a task's words matches
//! thousands of rows, so those reads were about a third of a full-text query. `cmp_bm25` keeps the
//! lengths it has read, per connection and per index, and reads a row's length from the table only
//! the first time it ranks that row.
//!
//! A kept length is only used while it is certainly the row's length:
//! - it is kept and used only during a read cmp itself armed ([`arm`]); a query that names
//!   `cmp_bm25` by hand reads every length from the table;
//! - it is kept and used only while this connection has written nothing in its open transaction
//!   (`sqlite3_txn_state` below `SQLITE_TXN_WRITE`), so every kept length was committed;
//! - everything kept is dropped when either index's committed contents change: FTS5 rewrites an
//!   index's structure record (`_data` row 10) whenever it writes the index, and the record holds a
//!   count of the pages ever written, so it never returns to an earlier value; the record is read at
//!   each [`arm`]. So are the schema's version (`PRAGMA schema_version`), and this connection's
//!   flushes ([`forget`]). Writes that leave the indexes alone (sessions, pins, a row still queued)
//!   keep what is kept, on this connection or any other.

use rusqlite::{ffi, Connection};
use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr};
use std::sync::{Mutex, OnceLock};

/// The name queries rank with: `rank MATCH 'cmp_bm25(N)'`, N = [`Index`] as a number.
pub const FUNCTION: &CStr = c"cmp_bm25";

/// The full-text indexes `cmp_bm25` ranks, each with its own kept lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    /// `cmp_memories_fts`, the word index.
    Words = 0,
    /// `cmp_memories_ngram`, the character-pair index.
    Pairs = 1,
}

impl Index {
    /// The `rank MATCH` constraint that ranks this index with `cmp_bm25`.
    pub fn rank_constraint(self) -> &'static str {
        match self {
            Index::Words => "rank MATCH 'cmp_bm25(0)'",
            Index::Pairs => "rank MATCH 'cmp_bm25(1)'",
        }
    }
}

/// Rowids below this are kept in a vector indexed by rowid; larger ones in a map.
const DENSE_ROWIDS: i64 = 1 << 22;
/// Most lengths kept in the map (a bound on memory, not a tuning knob): a full map is emptied.
const SPARSE_MAX: usize = 1 << 20;

/// Row lengths of one index: `len + 1` per rowid, 0 for a length not kept.
#[derive(Default)]
struct Lengths {
    dense: Vec<u32>,
    sparse: HashMap<i64, u32, rustc_hash::FxBuildHasher>,
}

impl Lengths {
    fn get(&self, rowid: i64) -> Option<u32> {
        let v = if (0..DENSE_ROWIDS).contains(&rowid) {
            self.dense.get(rowid as usize).copied().unwrap_or(0)
        } else {
            self.sparse.get(&rowid).copied().unwrap_or(0)
        };
        v.checked_sub(1)
    }

    fn put(&mut self, rowid: i64, len: u32) {
        let v = len.saturating_add(1);
        if (0..DENSE_ROWIDS).contains(&rowid) {
            let i = rowid as usize;
            if self.dense.len() <= i {
                self.dense.resize((i + 1).next_power_of_two(), 0);
            }
            self.dense[i] = v;
        } else {
            if self.sparse.len() >= SPARSE_MAX {
                self.sparse.clear();
            }
            self.sparse.insert(rowid, v);
        }
    }

    fn clear(&mut self) {
        *self = Lengths::default();
    }
}

/// The schema's version and both indexes' structure records (FTS5's `_data` row 10).
type Mark = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// One connection's kept lengths and whether a read armed them.
#[derive(Default)]
struct State {
    lengths: [Lengths; 2],
    armed: bool,
    /// What the kept lengths were read under: the schema's version and both indexes' structure
    /// records.
    mark: Option<Mark>,
}

/// A connection's state, shared by the FTS5 function (its user data) and cmp's reads.
struct Shared {
    db: *mut ffi::sqlite3,
    state: UnsafeCell<State>,
}

impl Shared {
    /// # Safety
    ///
    /// SQLite runs one call at a time on a connection (its mutex, or the application's promise in
    /// multi-thread mode), and every use of a connection's state happens inside a call on that
    /// connection: no two references to it are ever live at once.
    #[allow(clippy::mut_from_ref)]
    unsafe fn state(&self) -> &mut State {
        &mut *self.state.get()
    }
}

/// Every registered connection's state, by database handle.
fn registry() -> &'static Mutex<HashMap<usize, usize>> {
    static R: OnceLock<Mutex<HashMap<usize, usize>>> = OnceLock::new();
    R.get_or_init(Default::default)
}

fn shared(conn: &Connection) -> Option<&Shared> {
    // SAFETY: the handle is only a key; the pointer stays valid while the connection is open (it is
    // freed by FTS5's destructor when the connection closes), and `conn` is open.
    let key = unsafe { conn.handle() } as usize;
    let p = *registry().lock().ok()?.get(&key)?;
    Some(unsafe { &*(p as *const Shared) })
}

/// Registers `cmp_bm25` with FTS5 on `conn`.
pub fn register(conn: &Connection) -> rusqlite::Result<()> {
    let api = fts5_api(conn)?;
    // SAFETY: `conn` is open; the box is owned by FTS5 from here and freed by `destroy`.
    let db = unsafe { conn.handle() };
    let sh = Box::into_raw(Box::new(Shared { db, state: UnsafeCell::new(State::default()) }));
    // SAFETY: `api` is FTS5's API object of this connection; the function and destructor match the
    // signatures FTS5 calls.
    let rc = unsafe {
        let create = (*api).xCreateFunction.ok_or_else(|| rusqlite::Error::ModuleError("fts5_api".into()))?;
        create(api, FUNCTION.as_ptr(), sh.cast(), Some(rank), Some(destroy))
    };
    if rc != ffi::SQLITE_OK {
        // SAFETY: FTS5 did not take the box.
        drop(unsafe { Box::from_raw(sh) });
        return Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some("cmp_bm25".into())));
    }
    if let Ok(mut r) = registry().lock() {
        r.insert(db as usize, sh as usize);
    }
    Ok(())
}

/// FTS5's API object of `conn` (`SELECT fts5(?1)` with a pointer bound, as FTS5 documents).
fn fts5_api(conn: &Connection) -> rusqlite::Result<*mut ffi::fts5_api> {
    let mut api: *mut ffi::fts5_api = std::ptr::null_mut();
    // SAFETY: a statement prepared, bound, stepped and finalized on an open handle; the bound
    // pointer outlives the step that writes through it.
    let rc = unsafe {
        let db = conn.handle();
        let mut st: *mut ffi::sqlite3_stmt = std::ptr::null_mut();
        let mut rc = ffi::sqlite3_prepare_v2(db, c"SELECT fts5(?1)".as_ptr(), -1, &mut st, std::ptr::null_mut());
        if rc == ffi::SQLITE_OK {
            let p: *mut *mut ffi::fts5_api = &mut api;
            rc = ffi::sqlite3_bind_pointer(st, 1, p.cast(), c"fts5_api_ptr".as_ptr(), None);
            if rc == ffi::SQLITE_OK {
                rc = ffi::sqlite3_step(st);
                rc = if rc == ffi::SQLITE_ROW || rc == ffi::SQLITE_DONE { ffi::SQLITE_OK } else { rc };
            }
        }
        ffi::sqlite3_finalize(st);
        rc
    };
    if rc != ffi::SQLITE_OK || api.is_null() {
        return Err(rusqlite::Error::ModuleError("cmp: FTS5's API is not available on this connection".into()));
    }
    Ok(api)
}

unsafe extern "C" fn destroy(p: *mut c_void) {
    let sh = Box::from_raw(p.cast::<Shared>());
    if let Ok(mut r) = registry().lock() {
        if r.get(&(sh.db as usize)) == Some(&(p as usize)) {
            r.remove(&(sh.db as usize));
        }
    }
}

/// Lets `cmp_bm25` use and keep lengths until the guard drops: for one read by cmp. Drops what was
/// kept when an index or the schema changed since it was kept.
pub fn arm(conn: &Connection) -> Armed<'_> {
    let Some(sh) = shared(conn) else { return Armed(None) };
    let read = || -> rusqlite::Result<Mark> {
        conn.prepare_cached(
            "SELECT schema_version, (SELECT block FROM main.cmp_memories_fts_data WHERE id = 10),
                    (SELECT block FROM main.cmp_memories_ngram_data WHERE id = 10)
             FROM pragma_schema_version",
        )?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
    };
    // Kept lengths only save time: where the records cannot be read, the read goes on without them
    // (and meets whatever made them unreadable itself).
    let Ok(mark) = read() else { return Armed(None) };
    // SAFETY: see `Shared::state`; this call runs on `conn`.
    let st = unsafe { sh.state() };
    if st.mark.as_ref() != Some(&mark) {
        st.lengths.iter_mut().for_each(Lengths::clear);
        st.mark = Some(mark);
    }
    st.armed = true;
    Armed(Some(sh))
}

/// An armed read ([`arm`]).
pub struct Armed<'a>(Option<&'a Shared>);

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        if let Some(sh) = self.0 {
            // SAFETY: see `Shared::state`; the read that armed it runs on this connection.
            unsafe { sh.state() }.armed = false;
        }
    }
}

/// Drops every kept length of `conn`: rows were (re)indexed.
pub fn forget(conn: &Connection) {
    if let Some(sh) = shared(conn) {
        // SAFETY: see `Shared::state`.
        let st = unsafe { sh.state() };
        st.lengths.iter_mut().for_each(Lengths::clear);
        st.mark = None;
    }
}

/// What one query needs of every row: as `bm25()` computes it once per query.
struct QueryData {
    idf: Vec<f64>,
    freq: Vec<f64>,
    avgdl: f64,
    /// The lengths this query may use and keep, or None.
    kept: Option<usize>,
}

unsafe extern "C" fn free_query_data(p: *mut c_void) {
    drop(Box::from_raw(p.cast::<QueryData>()));
}

unsafe extern "C" fn count_hit(_: *const ffi::Fts5ExtensionApi, _: *mut ffi::Fts5Context, n: *mut c_void) -> c_int {
    *n.cast::<i64>() += 1;
    ffi::SQLITE_OK
}

/// `bm25()`'s per-query data (`fts5Bm25GetData` in FTS5's source), made on the query's first row.
unsafe fn query_data(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    sh: &Shared,
    index: Option<usize>,
) -> Result<*mut QueryData, c_int> {
    let get = api.xGetAuxdata.ok_or(ffi::SQLITE_ERROR)?;
    let p = get(fts, 0).cast::<QueryData>();
    if !p.is_null() {
        return Ok(p);
    }
    let n = api.xPhraseCount.ok_or(ffi::SQLITE_ERROR)?(fts).max(0) as usize;
    let (mut rows, mut tokens) = (0i64, 0i64);
    ok(api.xRowCount.ok_or(ffi::SQLITE_ERROR)?(fts, &mut rows))?;
    ok(api.xColumnTotalSize.ok_or(ffi::SQLITE_ERROR)?(fts, -1, &mut tokens))?;
    let avgdl = tokens as f64 / rows as f64;
    let mut idf = Vec::with_capacity(n);
    let query_phrase = api.xQueryPhrase.ok_or(ffi::SQLITE_ERROR)?;
    for i in 0..n {
        let mut hits = 0i64;
        ok(query_phrase(fts, i as c_int, (&mut hits as *mut i64).cast(), Some(count_hit)))?;
        let v = ((rows - hits) as f64 + 0.5) / (hits as f64 + 0.5);
        let v = v.ln();
        idf.push(if v <= 0.0 { 1e-6 } else { v });
    }
    let st = sh.state();
    let writing = ffi::sqlite3_txn_state(sh.db, c"main".as_ptr()) >= ffi::SQLITE_TXN_WRITE;
    let kept = index.filter(|_| st.armed && !writing);
    let data = Box::into_raw(Box::new(QueryData { idf, freq: vec![0.0; n], avgdl, kept }));
    let rc = api.xSetAuxdata.ok_or(ffi::SQLITE_ERROR)?(fts, data.cast(), Some(free_query_data));
    // xSetAuxdata frees the data itself when it fails.
    ok(rc)?;
    Ok(data)
}

fn ok(rc: c_int) -> Result<(), c_int> {
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rc)
    }
}

/// The row's length in tokens: kept, else read from the index (and kept when the query may).
unsafe fn row_length(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    sh: &Shared,
    kept: Option<usize>,
) -> Result<f64, c_int> {
    let rowid = kept.map(|_| api.xRowid.map_or(0, |f| f(fts)));
    if let (Some(k), Some(rowid)) = (kept, rowid) {
        if let Some(n) = sh.state().lengths[k].get(rowid) {
            return Ok(f64::from(n));
        }
    }
    let mut n: c_int = 0;
    ok(api.xColumnSize.ok_or(ffi::SQLITE_ERROR)?(fts, -1, &mut n))?;
    if let (Some(k), Some(rowid)) = (kept, rowid) {
        sh.state().lengths[k].put(rowid, n.max(0) as u32);
    }
    Ok(f64::from(n))
}

/// FTS5's k1 and b, or, in a build with the `eval-knobs` feature (evaluation only), `CMP_BM25_K1` and
/// `CMP_BM25_B` from the environment (read once).
fn params() -> (f64, f64) {
    #[cfg(feature = "eval-knobs")]
    {
        static P: OnceLock<(f64, f64)> = OnceLock::new();
        *P.get_or_init(|| (crate::retrieve::knob("CMP_BM25_K1", 1.2), crate::retrieve::knob("CMP_BM25_B", 0.75)))
    }
    #[cfg(not(feature = "eval-knobs"))]
    (1.2, 0.75)
}

/// The score of the current row (`fts5Bm25Function` in FTS5's source, same operations in the same
/// order): −Σ idf × f × (k1 + 1) / (f + k1 × (1 − b + b × D / avgdl)).
unsafe fn score(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    sh: &Shared,
    index: Option<usize>,
) -> Result<f64, c_int> {
    let (k1, b) = params();
    let data = &mut *query_data(api, fts, sh, index)?;
    data.freq.iter_mut().for_each(|f| *f = 0.0);
    let mut n_inst: c_int = 0;
    ok(api.xInstCount.ok_or(ffi::SQLITE_ERROR)?(fts, &mut n_inst))?;
    let inst = api.xInst.ok_or(ffi::SQLITE_ERROR)?;
    for i in 0..n_inst {
        let (mut ip, mut ic, mut io) = (0, 0, 0);
        ok(inst(fts, i, &mut ip, &mut ic, &mut io))?;
        if let Some(f) = data.freq.get_mut(ip as usize) {
            *f += 1.0;
        }
    }
    let d = row_length(api, fts, sh, data.kept)?;
    let mut s = 0.0;
    for (idf, f) in data.idf.iter().zip(&data.freq) {
        s += idf * ((f * (k1 + 1.0)) / (f + k1 * (1.0 - b + b * d / data.avgdl)));
    }
    // `-1.0 * score` in FTS5: the same bits.
    Ok(-s)
}

/// The FTS5 auxiliary function. Its one argument names the [`Index`] whose kept lengths it uses.
unsafe extern "C" fn rank(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n: c_int,
    args: *mut *mut ffi::sqlite3_value,
) {
    let api = &*api;
    let user = api.xUserData.map_or(std::ptr::null_mut(), |f| f(fts));
    if user.is_null() {
        ffi::sqlite3_result_error_code(ctx, ffi::SQLITE_MISUSE);
        return;
    }
    let sh = &*user.cast::<Shared>();
    let index =
        (n >= 1).then(|| ffi::sqlite3_value_int64(*args)).and_then(|i| usize::try_from(i).ok()).filter(|&i| i < 2);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| score(api, fts, sh, index))) {
        Ok(Ok(s)) => ffi::sqlite3_result_double(ctx, s),
        Ok(Err(rc)) => ffi::sqlite3_result_error_code(ctx, rc),
        Err(_) => ffi::sqlite3_result_error_code(ctx, ffi::SQLITE_ERROR),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn open(path: &std::path::Path) -> Connection {
        let conn = Connection::open(path).expect("open");
        crate::register(&conn).expect("register");
        conn.query_row("SELECT cmp_init()", [], |_| Ok(())).expect("init");
        conn
    }

    /// (rowid, score bits) of every match, by `bm25()` or by `cmp_bm25` in an armed read.
    fn scores(conn: &Connection, q: &str, ours: bool) -> Vec<(i64, u64)> {
        let f = if ours { "cmp_bm25(cmp_memories_fts, 0)" } else { "bm25(cmp_memories_fts)" };
        let sql =
            format!("SELECT rowid, {f} FROM main.cmp_memories_fts WHERE cmp_memories_fts MATCH ?1 ORDER BY rowid");
        let _armed = ours.then(|| arm(conn));
        let mut st = conn.prepare(&sql).expect("prepare");
        let rows = st.query_map([q], |r| Ok((r.get(0)?, r.get::<_, f64>(1)?.to_bits()))).expect("query");
        rows.collect::<rusqlite::Result<_>>().expect("rows")
    }

    fn add(conn: &Connection, content: &str) {
        conn.execute("INSERT INTO main.cmp_memories(content) VALUES (?1)", [content]).expect("insert");
        crate::store::pending::flush(conn).expect("flush");
    }

    fn kept(conn: &Connection) -> usize {
        let sh = shared(conn).expect("registered");
        // SAFETY: a test's single connection, between calls.
        let st = unsafe { sh.state() };
        st.lengths[0].dense.iter().filter(|&&v| v > 0).count() + st.lengths[0].sparse.len()
    }

    #[test]
    fn the_rank_constraint_ranks_as_bm25_does() {
        let dir = tempfile::tempdir().expect("dir");
        let conn = open(&dir.path().join("a.db"));
        for t in ["atlas ships friday", "atlas atlas review of the launch", "grocery list", "the launch moved"] {
            add(&conn, t);
        }
        let order = |rank: &str| -> Vec<(i64, u64)> {
            let sql = format!(
                "SELECT rowid, rank FROM main.cmp_memories_fts WHERE cmp_memories_fts MATCH '\"atlas\" OR \"launch\"' {rank}
                 ORDER BY rank, rowid"
            );
            let _armed = arm(&conn);
            let mut st = conn.prepare(&sql).expect("prepare");
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get::<_, f64>(1)?.to_bits()))).expect("query");
            rows.collect::<rusqlite::Result<_>>().expect("rows")
        };
        let want = order("");
        assert_eq!(want.len(), 3);
        assert_eq!(order(&format!("AND {}", Index::Words.rank_constraint())), want);
        assert_eq!(order(&format!("AND {}", Index::Words.rank_constraint())), want, "with the lengths kept");
        assert!(kept(&conn) >= 3);
    }

    #[test]
    fn a_row_changed_by_another_connection_is_ranked_by_its_new_length() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("b.db");
        let (a, b) = (open(&path), open(&path));
        add(&a, "atlas ships friday");
        add(&a, "atlas");
        assert_eq!(scores(&a, "atlas", true), scores(&a, "atlas", false));
        assert!(kept(&a) >= 2);
        b.execute(
            "UPDATE main.cmp_memories SET content = 'atlas and a much longer text than before' WHERE rid = 2",
            [],
        )
        .expect("update");
        crate::store::pending::flush(&b).expect("flush");
        assert_eq!(scores(&a, "atlas", true), scores(&a, "atlas", false));
    }

    #[test]
    fn writes_that_leave_the_indexes_alone_keep_the_lengths() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("e.db");
        let (a, b) = (open(&path), open(&path));
        add(&a, "atlas ships friday");
        add(&a, "atlas");
        assert_eq!(scores(&a, "atlas", true), scores(&a, "atlas", false));
        b.execute("INSERT INTO main.cmp_tasks(title) VALUES ('call Kate')", []).expect("task");
        let _ = b.query_row("SELECT cmp_session_reset('s')", [], |_| Ok(()));
        let _armed = arm(&a);
        assert_eq!(kept(&a), 2, "another connection's commit that left the indexes alone");
    }

    #[test]
    fn lengths_read_inside_a_transaction_that_wrote_are_not_kept() {
        let dir = tempfile::tempdir().expect("dir");
        let conn = open(&dir.path().join("c.db"));
        add(&conn, "atlas ships friday");
        add(&conn, "atlas");
        conn.execute_batch("BEGIN").expect("begin");
        conn.execute("UPDATE main.cmp_memories SET content = 'atlas with many more words in it now' WHERE rid = 2", [])
            .expect("update");
        crate::store::pending::flush(&conn).expect("flush");
        assert_eq!(scores(&conn, "atlas", true), scores(&conn, "atlas", false));
        assert_eq!(kept(&conn), 0, "nothing read under an uncommitted write is kept");
        conn.execute_batch("ROLLBACK").expect("rollback");
        assert_eq!(scores(&conn, "atlas", true), scores(&conn, "atlas", false));
        assert_eq!(kept(&conn), 2);
    }

    #[test]
    fn an_unarmed_query_keeps_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let conn = open(&dir.path().join("d.db"));
        add(&conn, "atlas ships friday");
        let mut st = conn
            .prepare(
                "SELECT cmp_bm25(cmp_memories_fts, 0) FROM main.cmp_memories_fts WHERE cmp_memories_fts MATCH 'atlas'",
            )
            .expect("prepare");
        let s: f64 = st.query_row([], |r| r.get(0)).expect("score");
        assert!(s < 0.0);
        assert_eq!(kept(&conn), 0);
    }

    #[test]
    fn lengths_are_kept_by_rowid_dense_or_sparse_and_bounded() {
        let mut l = Lengths::default();
        for rowid in [0, 1, 7, DENSE_ROWIDS - 1, DENSE_ROWIDS, -5, i64::MAX] {
            assert_eq!(l.get(rowid), None);
            l.put(rowid, 3);
            assert_eq!(l.get(rowid), Some(3), "{rowid}");
        }
        l.put(1, u32::MAX);
        assert_eq!(l.get(1), Some(u32::MAX - 1), "the largest length saturates, never wraps to 'not kept'");
        for k in 0..SPARSE_MAX as i64 + 1 {
            l.put(DENSE_ROWIDS + k, 1);
        }
        assert!(l.sparse.len() <= SPARSE_MAX);
        l.clear();
        assert_eq!(l.get(7), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Over random stores, rewrites and queries, `cmp_bm25` gives `bm25()`'s scores to the bit,
        /// with lengths kept and after rows change.
        #[test]
        fn scores_equal_bm25_to_the_bit(
            docs in prop::collection::vec(prop::collection::vec(0usize..12, 1..20), 1..30),
            rewrites in prop::collection::vec((0usize..30, prop::collection::vec(0usize..12, 1..20)), 0..5),
            query in prop::collection::vec(0usize..12, 1..4),
        ) {
            const WORDS: [&str; 12] =
                ["atlas", "ships", "friday", "the", "launch", "review", "kate", "emi", "tea", "park", "blue", "x"];
            let text = |ws: &[usize]| ws.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ");
            let dir = tempfile::tempdir().expect("dir");
            let path = dir.path().join("p.db");
            let (conn, other) = (open(&path), open(&path));
            for d in &docs {
                add(&conn, &text(d));
            }
            let q = query.iter().map(|&w| format!("\"{}\"", WORDS[w])).collect::<Vec<_>>().join(" OR ");
            prop_assert_eq!(scores(&conn, &q, true), scores(&conn, &q, false));
            for (k, (row, ws)) in rewrites.iter().enumerate() {
                let writer = if k % 2 == 0 { &other } else { &conn };
                let rid = (row % docs.len()) as i64 + 1;
                writer.execute("UPDATE main.cmp_memories SET content = ?1 WHERE rid = ?2", rusqlite::params![text(ws), rid])
                    .expect("update");
                crate::store::pending::flush(writer).expect("flush");
                prop_assert_eq!(scores(&conn, &q, true), scores(&conn, &q, false));
                prop_assert_eq!(scores(&conn, &q, true), scores(&conn, &q, false));
            }
        }
    }
}
