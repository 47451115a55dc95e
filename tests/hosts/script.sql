-- One script, every host: tests/hosts/run.sh runs this file through the sqlite3 shell, Python's
-- sqlite3 module (/usr/bin/python3, run.py), Node's better-sqlite3 (run.js) and Rust (tests/hosts.rs,
-- a bundled connection with cmp::register), and each output must equal tests/hosts/expected.txt.
--
-- Rules that keep every host's output the same:
--   * one statement per line, ending with `;` (the Python, Node and Rust runners split on lines that
--     end with `;`); lines starting with `--` are comments; lines starting with `.` are dot-commands:
--     `.load` loads the extension (Rust registers instead), the output settings are what every
--     runner prints anyway;
--   * every statement returns exactly one row (INSERT and UPDATE use RETURNING), whose first column
--     is a label; columns are printed joined by `|`, NULL as `NULL`; a failing statement prints
--     `error: <message>` instead (the shell's `Runtime error near line N: ` prefix is rewritten);
--   * no computed REAL reaches the output unformatted: SQLite 3.43+ (Node's better-sqlite3 and the
--     bundled Rust build) converts reals to text with up to 17 significant digits (0.1 + 0.2 prints
--     0.30000000000000004), SQLite 3.40 (Debian's shell and Python) with 15 (0.3). Format them with
--     printf. cmp rounds relevances to 6 decimals, so those print the same everywhere: the
--     `relevances` lines check that;
--   * every call that reads the clock gets an explicit `now`; every row has an explicit id.
.load ./target/release/libcmp
.mode list
.separator |
.headers off
.nullvalue NULL
SELECT 'init', cmp_init();
SELECT 'init again', cmp_init();
SELECT 'version', cmp_version() GLOB '[0-9]*.[0-9]*.[0-9]*';
SELECT 'profile claude', json_extract(p, '$.name'), json_extract(p, '$.pack_token_budget'), json_extract(p, '$.knapsack') FROM (SELECT cmp_profile('claude-sonnet') AS p);
SELECT 'profile gpt', json_extract(p, '$.name'), json_extract(p, '$.pack_token_budget'), json_extract(p, '$.knapsack') FROM (SELECT cmp_profile('gpt-4o') AS p);
SELECT 'tokens', cmp_tokens('Atlas ships on Friday'), cmp_tokens('Atlas ships on Friday', 'claude'), cmp_tokens('héllo wörld ✓');
INSERT INTO cmp_memories(id, kind, content, entities, occurred_at, captured_at, trust) VALUES ('mem_00000000a001', 'decision', 'Decision: the Atlas launch moves to June 12 so billing can finish first.', '["Atlas"]', '2026-04-15T10:00:00Z', '2026-04-15T10:05:00Z', 0.9) RETURNING 'insert', id, kind;
INSERT INTO cmp_memories(id, kind, content, entities, captured_at, superseded_by, superseded_at) VALUES ('mem_00000000a000', 'decision', 'Decision: the Atlas launch is on June 5.', '["Atlas"]', '2026-04-01T09:00:00Z', 'mem_00000000a001', '2026-04-15T10:05:00Z') RETURNING 'insert superseded', id, superseded_by;
INSERT INTO cmp_memories(id, kind, content, entities, captured_at, trust) VALUES ('mem_00000000a002', 'semantic', 'Dana leads the Atlas launch and signs off on every announcement.', '["Atlas","Dana"]', '2026-03-03T09:00:00Z', 0.8) RETURNING 'insert', id, kind;
INSERT INTO cmp_memories(id, kind, content, captured_at, trust) VALUES ('mem_00000000a003', 'negative', 'Never email customers on weekends.', '2026-03-02T09:00:00Z', 0.9) RETURNING 'insert', id, kind;
INSERT INTO cmp_memories(id, kind, content, entities, occurred_at, captured_at) VALUES ('mem_00000000a004', 'episodic', 'Lee fixed the two failed Atlas invoices in staging.', '["Lee","Atlas"]', '2026-05-30T10:00:00Z', '2026-05-30T10:05:00Z') RETURNING 'insert', id, kind;
INSERT INTO cmp_memories(id, kind, content, entities, captured_at, source_url, confidence) VALUES ('mem_00000000a005', 'procedural', 'To ship a release: tag it, run the smoke tests, then post the changelog.', NULL, '2026-03-13T09:00:00Z', 'https://wiki.example/release', 0.95) RETURNING 'insert', id, kind;
INSERT INTO cmp_memories(id, kind, content, entities, captured_at) VALUES ('mem_00000000a006', 'preference', 'Dana prefers one-page launch briefs with the risks listed first.', '["Dana"]', '2026-03-11T09:00:00Z') RETURNING 'insert', id, kind;
INSERT INTO cmp_memories(id, content, entities, captured_at, redacted) VALUES ('mem_00000000a009', 'Atlas launch secret: the salary bands of the launch team.', '["Atlas"]', '2026-05-04T09:00:00Z', 1) RETURNING 'insert redacted', id, redacted;
INSERT INTO cmp_memories(id, content, entities, captured_at, scope) VALUES ('mem_00000000b001', 'Book a dentist appointment before the Atlas launch.', '["Atlas"]', '2026-05-05T09:00:00Z', 'personal') RETURNING 'insert scope', id, scope;
INSERT INTO cmp_tasks(id, title, due_at, entities) VALUES ('task_000000000001', 'Draft the Atlas launch email', '2026-06-08', '["Atlas"]') RETURNING 'task', id, status;
SELECT 'flush', cmp_flush();
SELECT 'entities', group_concat(name, ',') FROM (SELECT name FROM cmp_entities ORDER BY norm);
SELECT 'fts rows', count(*) FROM cmp_memories_fts WHERE cmp_memories_fts MATCH 'atlas';
SELECT 'search', group_concat(ref, ' ') FROM cmp_search('When is the Atlas launch?', '{"now":"2026-06-01T00:00:00Z"}');
SELECT 'search top', ref, printf('%.6f', relevance), relevance_basis, why FROM cmp_search('atlas launch', '{"now":"2026-06-01T00:00:00Z"}') LIMIT 1;
SELECT 'search relevances', group_concat(ref || '=' || ifnull(relevance, 'NULL'), ' ') FROM cmp_search('When is the Atlas launch?', '{"now":"2026-06-01T00:00:00Z"}');
SELECT 'items relevance', ref, relevance, confidence FROM cmp_items('When is the Atlas launch?', 'claude', NULL, '{"now":"2026-06-01T00:00:00Z"}') WHERE ref = 'mem_00000000a001';
SELECT 'search redacted', count(*) FROM cmp_search('salary bands secret', '{"now":"2026-06-01T00:00:00Z"}') WHERE ref = 'mem_00000000a009' OR content LIKE '%salary%';
SELECT 'search superseded', count(*) FROM cmp_search('Atlas launch June 5', '{"now":"2026-06-01T00:00:00Z"}') WHERE ref = 'mem_00000000a000';
SELECT 'search as_of', group_concat(ref, ' ') FROM cmp_search('Atlas launch decision', '{"now":"2026-06-01T00:00:00Z","as_of":"2026-04-10T00:00:00Z"}') WHERE relevance IS NOT NULL;
SELECT 'search default scope', count(*) FROM cmp_search('dentist', '{"now":"2026-06-01T00:00:00Z"}');
SELECT 'search personal', group_concat(ref, ' ') FROM cmp_search('dentist', '{"now":"2026-06-01T00:00:00Z","scope":"personal"}');
SELECT 'context claude keys', (SELECT group_concat(key, ',') FROM json_each(c)), json_extract(c, '$.model'), json_extract(c, '$.budget.tokens'), json_extract(c, '$.budget.used'), json_extract(c, '$.coverage'), json_type(c, '$.working_memory') FROM (SELECT cmp_context('When is the Atlas launch, and who signs off?', 'claude', NULL, NULL, '{"now":"2026-06-01T00:00:00Z"}') AS c);
SELECT 'context claude items', (SELECT group_concat(json_extract(value, '$.ref') || ':' || json_extract(value, '$.layer'), ' ') FROM json_each(c, '$.items')) FROM (SELECT cmp_context('When is the Atlas launch, and who signs off?', 'claude', NULL, NULL, '{"now":"2026-06-01T00:00:00Z"}') AS c);
SELECT 'context gpt', json_extract(c, '$.model'), json_extract(c, '$.budget.tokens'), json_extract(c, '$.budget.used'), json_extract(c, '$.budget.used') = cmp_tokens(c, 'gpt-4o'), (SELECT group_concat(json_extract(value, '$.ref') || ':' || json_extract(value, '$.layer'), ' ') FROM json_each(c, '$.items')) FROM (SELECT cmp_context('When is the Atlas launch, and who signs off?', 'gpt-4o', 1000, NULL, '{"now":"2026-06-01T00:00:00Z"}') AS c);
SELECT 'context item', json_extract(c, '$.items[0]') FROM (SELECT cmp_context('Who signs off on the Atlas launch?', 'claude', NULL, NULL, '{"now":"2026-06-01T00:00:00Z","audit":true}') AS c);
SELECT 'context personal', (SELECT group_concat(json_extract(value, '$.ref'), ' ') FROM json_each(c, '$.items')) FROM (SELECT cmp_context('dentist before the Atlas launch', 'claude', NULL, NULL, '{"now":"2026-06-01T00:00:00Z","scope":"personal"}') AS c);
SELECT 'context pin', json_extract(c, '$.pin.sha'), json_extract(c, '$.pin.bytes') FROM (SELECT cmp_context('When is the Atlas launch?', 'claude', NULL, NULL, '{"now":"2026-06-01T00:00:00Z","pin":true}') AS c);
SELECT 'context json', json_type(c, '$.legend'), json_type(c, '$.warnings') FROM (SELECT cmp_context('When is the Atlas launch?', 'claude', NULL, NULL, '{"now":"2026-06-01T00:00:00Z","format":"json"}') AS c);
SELECT 'context markdown', instr(cmp_context('When is the Atlas launch?', 'claude', NULL, NULL, '{"now":"2026-06-01T00:00:00Z","format":"markdown"}'), 'mem_00000000a001') > 0;
SELECT 'context bad option', cmp_context('atlas', 'claude', NULL, NULL, '{"colour":"blue"}');
SELECT 'context bad budget', cmp_context('atlas', 'claude', 1.5);
SELECT 'items', group_concat(ref || ':' || layer || ':' || relevance_basis, ' ') FROM cmp_items('When is the Atlas launch, and who signs off?', 'claude', NULL, '{"now":"2026-06-01T00:00:00Z"}');
SELECT 'items = context', (SELECT group_concat(ref, ' ') FROM cmp_items('When is the Atlas launch?', 'gpt', NULL, '{"now":"2026-06-01T00:00:00Z"}')) = (SELECT group_concat(json_extract(value, '$.ref'), ' ') FROM json_each(cmp_context('When is the Atlas launch?', 'gpt', NULL, NULL, '{"now":"2026-06-01T00:00:00Z"}'), '$.items'));
SELECT 'query find', json_extract(q, '$.items[0].ref'), json_array_length(q, '$.items') FROM (SELECT cmp_query('{"find":"atlas launch","now":"2026-06-01T00:00:00Z","k":2}') AS q);
SELECT 'query layers', (SELECT group_concat(json_extract(value, '$.ref'), ' ') FROM json_each(q, '$.items')) FROM (SELECT cmp_query('{"find":"atlas","layers":["decision","negative"],"now":"2026-06-01T00:00:00Z"}') AS q);
SELECT 'query rejected', cmp_query('{"find":"atlas","min_relevance":2.5}');
SELECT 'query not json', cmp_query('find atlas');
SELECT 'expand document', json_extract(e, '$.found'), json_extract(e, '$.document.content') FROM (SELECT cmp_expand('mem_00000000a002') AS e);
SELECT 'expand neighbors', (SELECT group_concat(json_extract(value, '$.ref'), ' ') FROM json_each(e, '$.neighbors[0].items')) FROM (SELECT cmp_expand('mem_00000000a002', 'neighbors', '{"now":"2026-06-01T00:00:00Z"}') AS e);
SELECT 'expand redacted', json_extract(cmp_expand('mem_00000000a009'), '$.found');
SELECT 'expand other scope', json_extract(cmp_expand('mem_00000000b001'), '$.found');
SELECT 'expand bad direction', cmp_expand('mem_00000000a002', 'sideways');
SELECT 'turn 1', json_extract(c, '$.working_memory') FROM (SELECT cmp_context('When is the Atlas launch?', 'claude', NULL, 'chat-1', '{"now":"2026-06-01T00:00:00Z"}') AS c);
INSERT INTO cmp_memories(id, kind, content, entities, captured_at) VALUES ('mem_00000000a010', 'semantic', 'The Atlas launch party is at the Lisbon office.', '["Atlas"]', '2026-06-01T00:00:30Z') RETURNING 'insert', id, kind;
SELECT 'turn 2', json_extract(c, '$.working_memory') FROM (SELECT cmp_context('When is the Atlas launch?', 'claude', NULL, 'chat-1', '{"now":"2026-06-01T00:01:00Z","send":"delta"}') AS c);
SELECT 'session', json_extract(s, '$.turn'), json_extract(s, '$.cursor'), (SELECT count(*) FROM json_each(s, '$.known')), json_extract(s, '$.known.mem_00000000a010') FROM (SELECT cmp_session('chat-1') AS s);
SELECT 'session reset', cmp_session_reset('chat-1'), json_extract(cmp_session('chat-1'), '$.turn');
UPDATE cmp_memories SET redacted = 1 WHERE id = 'mem_00000000a006' RETURNING 'redact', id;
SELECT 'after redact', count(*) FROM cmp_search('Dana prefers one-page briefs', '{"now":"2026-06-01T00:00:00Z"}') WHERE ref = 'mem_00000000a006';
SELECT 'error tokens', cmp_tokens(x'00');
SELECT 'error profile', cmp_profile();
SELECT 'integrity', integrity_check FROM pragma_integrity_check;
