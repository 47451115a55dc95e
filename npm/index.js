// cmp, the Contextual Memory Protocol inside SQLite, packaged for Node.
//
//   const Database = require('better-sqlite3');
//   const cmp = require('sqlite-cmp');
//   const db = new Database('memories.db');
//   cmp.load(db);
//   db.prepare('SELECT cmp_init()').get();
//
// getLoadablePath() is the absolute path of the loadable library inside this package; load(db) loads
// it into a better-sqlite3 Database (or a node:sqlite DatabaseSync opened with allowExtension: true).
'use strict';

const fs = require('fs');
const path = require('path');

// SQLite derives the entry point, sqlite3_cmp_init, from the file name "libcmp".
const NAMES = { linux: 'libcmp.so', darwin: 'libcmp.dylib', win32: 'cmp.dll' };

function getLoadablePath() {
  const name = NAMES[process.platform] || 'libcmp.so';
  const file = path.join(__dirname, 'lib', name);
  if (!fs.existsSync(file)) {
    throw new Error(
      `sqlite-cmp getLoadablePath: ${file} does not exist: this package holds no library for ` +
        `${process.platform}-${process.arch}; build one from the repository (bash npm/build.sh)`,
    );
  }
  return file;
}

function load(db) {
  if (db == null) throw new TypeError('sqlite-cmp load: db must be an open database, got ' + db);
  const file = getLoadablePath();
  if (typeof db.loadExtension !== 'function') {
    throw new TypeError(
      'sqlite-cmp load: db has no loadExtension method; pass a better-sqlite3 Database or a ' +
        'node:sqlite DatabaseSync opened with { allowExtension: true }',
    );
  }
  // node:sqlite needs loading switched on per call; better-sqlite3 has no such switch.
  const toggle = typeof db.enableLoadExtension === 'function';
  if (toggle) db.enableLoadExtension(true);
  try {
    db.loadExtension(file);
  } finally {
    if (toggle) db.enableLoadExtension(false);
  }
}

module.exports = { getLoadablePath, load };
