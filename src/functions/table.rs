//! A generic eponymous table-valued function: `SELECT * FROM name(arg1, arg2, …)`, `DIRECTONLY`. Arguments are
//! hidden columns; rows are computed once per scan by [`TableFn::rows`]. Rusqlite does not guard
//! virtual-table callbacks against panics, so the computation runs behind `catch_unwind` here: a
//! panic becomes an SQL error, never an abort of the host.

use rusqlite::ffi;
use rusqlite::types::{Value, ValueRef};
use rusqlite::vtab::{Context, Filters, IndexConstraintOp, IndexInfo, VTab, VTabConfig, VTabConnection, VTabCursor};
use rusqlite::{Connection, Result};
use std::borrow::Cow;
use std::ffi::{c_int, CStr};
use std::marker::PhantomData;

/// A table-valued function.
pub trait TableFn: 'static {
    /// SQL name (for errors).
    const NAME: &'static str;
    /// `CREATE TABLE x(visible columns…, arg1 HIDDEN, …)`.
    const SCHEMA: &'static CStr;
    /// Number of visible columns.
    const COLUMNS: c_int;
    /// Number of hidden argument columns.
    const ARGS: usize;
    /// True for the one table whose connection keeps the statement wrapper of its database
    /// ([`super::conn`]).
    const KEEPS_STATEMENTS: bool = false;
    /// Computes the rows for the given arguments (None = argument not given).
    fn rows(conn: &Connection, args: &[Option<ValueRef<'_>>]) -> crate::error::Result<Vec<Vec<Value>>>;
}

/// The virtual table of a [`TableFn`].
#[repr(C)]
pub struct Tab<T: TableFn> {
    base: ffi::sqlite3_vtab,
    db: *mut ffi::sqlite3,
    _t: PhantomData<T>,
}

unsafe impl<'vtab, T: TableFn> VTab<'vtab> for Tab<T> {
    type Aux = ();
    type Cursor = Cursor<'vtab, T>;

    fn connect(
        db: &mut VTabConnection,
        _aux: Option<&()>,
        _module: &[u8],
        _database: &[u8],
        _table: &[u8],
        _args: &[&[u8]],
    ) -> Result<(Cow<'static, CStr>, Self)> {
        // Like the scalar functions that read the database: callable from top-level SQL only, so a
        // view or trigger stored in a database file cannot read a scope its caller did not ask for.
        db.config(VTabConfig::DirectOnly)?;
        let handle = unsafe { db.handle() };
        if T::KEEPS_STATEMENTS {
            super::conn::register(handle);
        }
        Ok((Cow::Borrowed(T::SCHEMA), Tab { base: ffi::sqlite3_vtab::default(), db: handle, _t: PhantomData }))
    }

    fn best_index(&self, info: &mut IndexInfo) -> Result<bool> {
        let mut slots: Vec<Option<usize>> = vec![None; T::ARGS];
        for (i, c) in info.constraints().enumerate() {
            let col = c.column() - T::COLUMNS;
            if col < 0 || col as usize >= T::ARGS {
                continue;
            }
            if c.operator() != IndexConstraintOp::SQLITE_INDEX_CONSTRAINT_EQ {
                continue;
            }
            if !c.is_usable() {
                return Ok(false);
            }
            slots[col as usize] = Some(i);
        }
        let mut mask = 0;
        let mut n = 0;
        for (col, slot) in slots.iter().enumerate() {
            if let Some(i) = slot {
                n += 1;
                mask |= 1 << col;
                let mut u = info.constraint_usage(*i);
                u.set_argv_index(n);
                u.set_omit(true);
            }
        }
        info.set_idx_num(mask);
        info.set_estimated_cost(if mask & 1 == 1 { 10.0 } else { 1e12 });
        info.set_estimated_rows(25);
        Ok(true)
    }

    fn open(&'vtab mut self) -> Result<Self::Cursor> {
        Ok(Cursor { base: ffi::sqlite3_vtab_cursor::default(), db: self.db, rows: Vec::new(), pos: 0, _t: PhantomData })
    }
}

impl<T: TableFn> Drop for Tab<T> {
    fn drop(&mut self) {
        if T::KEEPS_STATEMENTS {
            super::conn::unregister(self.db);
        }
    }
}

/// Cursor over the computed rows.
#[repr(C)]
pub struct Cursor<'vtab, T: TableFn> {
    base: ffi::sqlite3_vtab_cursor,
    db: *mut ffi::sqlite3,
    rows: Vec<Vec<Value>>,
    pos: usize,
    _t: PhantomData<&'vtab Tab<T>>,
}

unsafe impl<T: TableFn> VTabCursor for Cursor<'_, T> {
    fn filter(&mut self, idx_num: c_int, _idx_str: Option<&str>, args: &Filters<'_>) -> Result<()> {
        let mut given: Vec<Option<ValueRef<'_>>> = Vec::with_capacity(T::ARGS);
        let mut k = 0;
        for col in 0..T::ARGS {
            if idx_num & (1 << col) != 0 {
                given.push(args.get_raw_opt(k));
                k += 1;
            } else {
                given.push(None);
            }
        }
        let db = self.db;
        let computed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // The SQL boundary: the function's name is added to its errors here, once.
            unsafe { super::conn::with(db, |conn| T::rows(conn, &given)) }?.map_err(|e| e.in_function(T::NAME).into())
        }));
        self.pos = 0;
        match computed {
            Ok(Ok(rows)) => {
                self.rows = rows;
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(crate::error::Error::panicked().in_function(T::NAME).into()),
        }
    }

    fn next(&mut self) -> Result<()> {
        self.pos += 1;
        Ok(())
    }

    fn eof(&self) -> bool {
        self.pos >= self.rows.len()
    }

    fn column(&self, ctx: &mut Context, i: c_int) -> Result<()> {
        match self.rows.get(self.pos).and_then(|r| r.get(i as usize)) {
            Some(v) => ctx.set_result(v),
            None => ctx.set_result(&Value::Null),
        }
    }

    fn rowid(&self) -> Result<i64> {
        Ok(self.pos as i64 + 1)
    }
}

/// Access to a filter argument as a raw value.
trait RawArg {
    fn get_raw_opt(&self, i: usize) -> Option<ValueRef<'_>>;
}

impl RawArg for Filters<'_> {
    fn get_raw_opt(&self, i: usize) -> Option<ValueRef<'_>> {
        self.iter().nth(i)
    }
}
