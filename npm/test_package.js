// Checks an installed sqlite-cmp tarball the way a user would use it. CI installs the tarball into a
// fresh temporary project, copies this file there and runs it with NODE_PATH pointing at a
// better-sqlite3@12 install (tests/hosts/node-setup.sh):
//
//   node test_package.js [MARKDOWN ...]
//
// After the checks of the package itself, runs every ```js block of each MARKDOWN file that uses
// sqlite-cmp (the package's README and the repository's, so their examples cannot drift), each as a
// script in a fresh directory inside this project. Prints one line per check and `N passed, N failed`; exits 1 on any failure.
'use strict';

const assert = require('assert');
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

let passed = 0;
let failed = 0;

function check(name, fn) {
  try {
    fn();
    passed += 1;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}

check('require("sqlite-cmp") resolves to the installed package', () => {
  const where = require.resolve('sqlite-cmp');
  assert.ok(where.includes(`${path.sep}node_modules${path.sep}sqlite-cmp${path.sep}`), where);
});

check('getLoadablePath() is the library inside the package', () => {
  const p = require('sqlite-cmp').getLoadablePath();
  assert.ok(path.isAbsolute(p) && fs.statSync(p).isFile(), p);
});

check('load(db), cmp_init, insert, cmp_context cites the memory', () => {
  const Database = require('better-sqlite3');
  const cmp = require('sqlite-cmp');
  const db = new Database(':memory:');
  cmp.load(db);
  const version = db.prepare('SELECT cmp_init() AS v').get().v;
  assert.ok(version >= 1, String(version));
  db.prepare('INSERT INTO cmp_memories(id, content, entities, captured_at) VALUES (?, ?, ?, ?)').run(
    'mem_000000000001', 'Atlas ships on Friday', '["Atlas"]', '2026-05-01T00:00:00Z');
  const { pack } = db
    .prepare("SELECT cmp_context(?, 'claude', 800, NULL, ?) AS pack")
    .get('when does Atlas ship?', JSON.stringify({ now: '2026-06-01T00:00:00Z', format: 'json' }));
  const refs = JSON.parse(pack).items.map((i) => i.ref);
  assert.deepStrictEqual(refs, ['mem_000000000001']);
  db.close();
});

check('load() without a database names what it needs', () => {
  const cmp = require('sqlite-cmp');
  assert.throws(() => cmp.load({}), /^TypeError: sqlite-cmp load: db has no loadExtension method/);
  assert.throws(() => cmp.load(undefined), /^TypeError: sqlite-cmp load: db must be an open database/);
});

for (const doc of process.argv.slice(2)) {
  const text = fs.readFileSync(doc, 'utf8');
  const blocks = [...text.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]).filter((b) => b.includes('sqlite-cmp'));
  check(`${doc} has a js example using sqlite-cmp`, () => assert.ok(blocks.length > 0, 'none found'));
  blocks.forEach((code, i) => {
    check(`${doc}: js example ${i + 1} runs`, () => {
      const dir = fs.mkdtempSync(path.join(__dirname, 'example-'));
      try {
        fs.writeFileSync(path.join(dir, 'example.js'), code);
        execFileSync(process.execPath, ['example.js'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
