-- Smoke checks of the loadable extension, run by .ci/run twice: through the sqlite3 shell
-- (`sqlite3 :memory: < tests/smoke.sql`) and through Python (`/usr/bin/python3 tests/smoke.py`, which
-- executes this same file). Both outputs must equal tests/smoke.expected, one line per check.
-- Keep every value text or integer (format reals with printf) so both hosts print it the same way.
.bail on
.load ./target/release/libcmp
.mode list
.separator |
.headers off
.nullvalue NULL

SELECT 'init', cmp_init();
SELECT 'init again', cmp_init();
SELECT 'version', cmp_version() GLOB '[0-9]*.[0-9]*.[0-9]*';
SELECT 'debug', instr(cmp_debug(), 'fts5 yes') > 0;
SELECT 'profile', json_extract(cmp_profile('gpt-4o'), '$.name'), json_extract(cmp_profile(NULL), '$.pack_token_budget');
SELECT 'tokens', cmp_tokens('Atlas ships on Friday'), cmp_tokens('Atlas ships on Friday', 'cursor');

INSERT INTO cmp_memories(id, kind, content, entities, occurred_at, captured_at) VALUES
  ('mem_00000000a001', 'decision', 'Decision: the Atlas launch is on June 12.', '["Atlas"]', NULL, '2026-05-01T09:00:00Z'),
  ('mem_00000000a002', 'semantic', 'Dana signs off on every launch announcement.', '["Dana","Atlas"]', NULL, '2026-05-02T09:00:00Z'),
  ('mem_00000000a003', 'negative', 'Never email customers on weekends.', NULL, NULL, '2026-05-03T09:00:00Z'),
  ('mem_00000000a004', 'episodic', 'Lee fixed the two failed invoices in staging.', '["Lee"]', '2026-05-30T10:00:00Z', '2026-05-30T10:05:00Z'),
  ('mem_00000000a005', 'procedural', 'Runs the beta survey every Monday.', '["Priya"]', NULL, '2026-04-01T09:00:00Z');
INSERT INTO cmp_memories(id, content, captured_at, redacted) VALUES
  ('mem_00000000a006', 'Atlas launch secret: the salary bands.', '2026-05-04T09:00:00Z', 1);
INSERT INTO cmp_memories(id, content, captured_at, scope) VALUES
  ('mem_00000000b001', 'Book a dentist appointment before the Atlas launch.', '2026-05-05T09:00:00Z', 'personal');
INSERT INTO cmp_memories(content, captured_at, scope) VALUES ('Generated id row', '2026-05-06T09:00:00Z', 'ids');

SELECT 'generated id', id GLOB 'mem_[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
  FROM cmp_memories WHERE content = 'Generated id row';
SELECT 'queued', count(*) FROM cmp_pending;
SELECT 'flush', cmp_flush();
SELECT 'entities', group_concat(name, ',') FROM (SELECT name FROM cmp_entities ORDER BY norm);
SELECT 'search', group_concat(ref, ' ') FROM cmp_search('When does Atlas launch?', '{"now":"2026-06-01T00:00:00Z"}');
SELECT 'top', ref, printf('%.6f', relevance), relevance_basis, why
  FROM cmp_search('atlas launches', '{"now":"2026-06-01T00:00:00Z"}') LIMIT 1;
SELECT 'entity', json_extract(why, '$.matched_terms'), instr(why, '"entity"') > 0
  FROM cmp_search('Anything from Priya?', '{"now":"2026-06-01T00:00:00Z"}') WHERE ref = 'mem_00000000a005';
SELECT 'redacted', count(*) FROM cmp_search('atlas launch secret salary', '{"now":"2026-06-01T00:00:00Z"}')
  WHERE ref = 'mem_00000000a006' OR content LIKE '%salary%';
SELECT 'scope default', count(*) FROM cmp_search('dentist', '{"now":"2026-06-01T00:00:00Z"}') WHERE ref = 'mem_00000000b001';
SELECT 'scope personal', group_concat(ref, ' ') FROM cmp_search('dentist', '{"now":"2026-06-01T00:00:00Z","scope":"personal"}');
SELECT 'recency only', count(*), count(relevance) FROM cmp_search('what happened recently?', '{"now":"2026-06-01T00:00:00Z"}');

UPDATE cmp_memories SET embedding = x'0000803f00000000' WHERE id = 'mem_00000000a002';
UPDATE cmp_memories SET embedding = x'000000000000803f' WHERE id = 'mem_00000000a003';
SELECT 'vector', ref, printf('%.6f', relevance), relevance_basis
  FROM cmp_search('', '{"now":"2026-06-01T00:00:00Z","query_embedding":[1.0,0.1]}') LIMIT 1;

UPDATE cmp_memories SET content = 'Decision: the Atlas launch is on June 19.' WHERE id = 'mem_00000000a001';
UPDATE cmp_memories SET redacted = 1 WHERE id = 'mem_00000000a003';
DELETE FROM cmp_memories WHERE id = 'mem_00000000a004';
INSERT INTO cmp_memories_fts(cmp_memories_fts) VALUES ('integrity-check');
SELECT 'requeued', count(*) FROM cmp_pending;
SELECT 'flush again', cmp_flush();
INSERT INTO cmp_memories_fts(cmp_memories_fts) VALUES ('integrity-check');
SELECT 'fts rows', count(*) FROM cmp_memories_fts_docsize;
SELECT 'fts june 19', group_concat(m.id, ' ') FROM cmp_memories_fts JOIN cmp_memories AS m ON m.rid = cmp_memories_fts.rowid
  WHERE cmp_memories_fts MATCH '"june" AND "19"';
SELECT 'entities after', group_concat(name, ',') FROM (SELECT name FROM cmp_entities ORDER BY norm);

SELECT 'context', json_extract(c, '$.smp'), json_extract(c, '$.model'), json_extract(c, '$.budget.tokens'),
       json_extract(c, '$.budget.used') <= json_extract(c, '$.budget.tokens'),
       json_extract(c, '$.budget.used') = cmp_tokens(c, 'claude'), json_type(c, '$.working_memory')
  FROM (SELECT cmp_context('When is the Atlas launch?', 'claude', NULL, NULL, '{"now":"2026-06-01T00:00:00Z"}') AS c);
SELECT 'items', (SELECT group_concat(ref, ' ') FROM cmp_items('When is the Atlas launch?', 'claude', NULL, '{"now":"2026-06-01T00:00:00Z"}'))
     = (SELECT group_concat(json_extract(value, '$.ref'), ' ')
        FROM json_each(cmp_context('When is the Atlas launch?', 'claude', NULL, NULL, '{"now":"2026-06-01T00:00:00Z"}'), '$.items'));
SELECT 'integrity', integrity_check FROM pragma_integrity_check;
