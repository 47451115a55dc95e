// cmp from Node: load the extension into better-sqlite3 (v12), write four memories with plain SQL,
// and print the context pack cmp builds for a task, then the refs it cites.
//
//   cargo build --release --features loadable_extension
//   npm install better-sqlite3@12          # anywhere on NODE_PATH, or next to this file
//   node examples/node/quickstart.js
//
// CMP_LIB overrides the library path (without the .so suffix).
'use strict';

const path = require('path');
const Database = require('better-sqlite3');

const LIB = process.env.CMP_LIB || path.join(__dirname, '..', '..', 'target', 'release', 'libcmp');
const TASK = 'Draft the Atlas launch announcement for Dana';
// A fixed clock makes the output the same on every run; leave `now` out to use the real one.
const OPTIONS = { now: '2026-06-01T00:00:00Z' };

const MEMORIES = [
  ['mem_000000000001', 'decision', 'The Atlas launch is on June 12.', ['Atlas']],
  ['mem_000000000002', 'semantic', 'Dana signs off on every Atlas announcement.', ['Atlas', 'Dana']],
  ['mem_000000000003', 'negative', 'Never email customers on weekends.', []],
  ['mem_000000000004', 'preference', 'Dana prefers one-page briefs with the risks first.', ['Dana']],
];

const db = new Database(':memory:'); // or a file: new Database('memories.db')
db.loadExtension(LIB);
console.log(`schema version ${db.prepare('SELECT cmp_init()').pluck().get()}`); // creates or upgrades the schema

// Memories are plain rows; triggers keep the full-text index and the entity graph in step.
const insert = db.prepare(
  "INSERT INTO cmp_memories(id, kind, content, entities, captured_at) VALUES (?, ?, ?, ?, '2026-05-01T09:00:00Z')",
);
db.transaction(() => {
  for (const [id, kind, content, entities] of MEMORIES) insert.run(id, kind, content, JSON.stringify(entities));
})();

const context = db.prepare('SELECT cmp_context(?, ?, NULL, NULL, ?)').pluck();

// The pack as Markdown, ready to paste into a prompt...
console.log(context.get(TASK, 'claude', JSON.stringify({ ...OPTIONS, format: 'markdown' })));

// ...and as the SMP envelope (the default format), whose items carry refs and provenance.
const pack = JSON.parse(context.get(TASK, 'claude', JSON.stringify(OPTIONS)));
console.log(`cited refs (${pack.budget.used}/${pack.budget.tokens} tokens, ${pack.coverage.status}):`);
for (const item of pack.items) {
  const relevance = item.relevance === null ? '-' : item.relevance.toFixed(3);
  console.log(`  ${item.ref}  ${item.layer.padEnd(11)}  relevance ${relevance.padEnd(5)}  ${item.content}`);
}
