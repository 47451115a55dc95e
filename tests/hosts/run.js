// Runs tests/hosts/script.sql through Node's better-sqlite3 (v12) with the loadable extension and
// prints one line per result row, as the sqlite3 shell does in list mode (`|` between columns, NULL
// as `NULL`); a failing statement prints `error: <message>` and the run goes on. tests/hosts/run.sh
// compares the output with tests/hosts/expected.txt.
//
// Usage, from the repository root: NODE_PATH=<dir>/node_modules node tests/hosts/run.js [SCRIPT]
// (run.sh installs better-sqlite3@12 into ${XDG_CACHE_HOME:-$HOME/.cache}/cmp-node).
'use strict';

const fs = require('fs');
const Database = require('better-sqlite3');

const SETTINGS = new Set(['.mode list', '.separator |', '.headers off', '.nullvalue NULL', '.bail off']);

// [line number, dot-command or SQL] in order: one statement ends at a line ending with `;`.
function statements(text) {
  const out = [];
  let pending = [];
  let start = 0;
  text.split(/\r?\n/).forEach((line, i) => {
    const stripped = line.trim();
    if (pending.length === 0 && (stripped === '' || stripped.startsWith('--'))) return;
    if (pending.length === 0 && stripped.startsWith('.')) {
      out.push([i + 1, stripped]);
      return;
    }
    if (pending.length === 0) start = i + 1;
    pending.push(line);
    if (stripped.endsWith(';')) {
      out.push([start, pending.join('\n')]);
      pending = [];
    }
  });
  if (pending.length) throw new Error(`line ${start}: statement does not end with ';'`);
  return out;
}

function main() {
  const script = process.argv[2] || 'tests/hosts/script.sql';
  const db = new Database(':memory:');
  // Integers come back as BigInt, so a REAL (a JS number) can be told from an INTEGER.
  const castReal = db.prepare('SELECT CAST(? AS TEXT)').pluck();
  const render = (v) => {
    if (v === null || v === undefined) return 'NULL';
    if (typeof v === 'bigint') return v.toString();
    // SQLite's own real-to-text conversion, as the shell prints reals.
    if (typeof v === 'number') return castReal.get(v);
    if (Buffer.isBuffer(v)) return v.toString('utf8');
    return String(v);
  };
  const lines = [];
  for (const [number, stmt] of statements(fs.readFileSync(script, 'utf8'))) {
    if (stmt.startsWith('.')) {
      if (stmt.startsWith('.load ')) db.loadExtension(stmt.slice(6).trim());
      else if (!SETTINGS.has(stmt)) throw new Error(`${script}:${number}: unsupported dot-command ${stmt}`);
      continue;
    }
    try {
      const st = db.prepare(stmt);
      if (st.reader) {
        for (const row of st.safeIntegers(true).raw(true).all()) lines.push(row.map(render).join('|'));
      } else {
        st.run();
      }
    } catch (e) {
      if (!(e instanceof Database.SqliteError)) throw e;
      lines.push(`error: ${e.message}`);
    }
  }
  process.stdout.write(lines.map((l) => l + '\n').join(''));
}

main();
