-- cmp from the sqlite3 shell: load the extension, write four memories with plain SQL, and print the
-- context pack cmp builds for a task, then the refs it cites. From the repository root:
--
--   cargo build --release --features loadable_extension
--   sqlite3 :memory: < examples/shell/quickstart.sql      (or: sqlite3 memories.db, then .read it)
.bail on
.load ./target/release/libcmp
.mode list
.headers off
.nullvalue -

SELECT 'schema version ' || cmp_init();

-- Memories are plain rows; triggers keep the full-text index and the entity graph in step.
INSERT INTO cmp_memories(id, kind, content, entities, captured_at) VALUES
  ('mem_000000000001', 'decision',   'The Atlas launch is on June 12.',                    '["Atlas"]',        '2026-05-01T09:00:00Z'),
  ('mem_000000000002', 'semantic',   'Dana signs off on every Atlas announcement.',        '["Atlas","Dana"]', '2026-05-01T09:00:00Z'),
  ('mem_000000000003', 'negative',   'Never email customers on weekends.',                 '[]',               '2026-05-01T09:00:00Z'),
  ('mem_000000000004', 'preference', 'Dana prefers one-page briefs with the risks first.', '["Dana"]',         '2026-05-01T09:00:00Z');

-- The pack as Markdown, ready to paste into a prompt. A fixed clock (`now`) makes the output the same
-- on every run; leave it out to use the real one.
SELECT cmp_context('Draft the Atlas launch announcement for Dana', 'claude', NULL, NULL,
                   '{"now":"2026-06-01T00:00:00Z","format":"markdown"}');

-- The SMP envelope (the default format): its items carry the refs and their provenance.
.separator "  "
SELECT 'cited refs (' || json_extract(pack, '$.budget.used') || '/' || json_extract(pack, '$.budget.tokens')
       || ' tokens, ' || json_extract(pack, '$.coverage.status') || '):'
FROM (SELECT cmp_context('Draft the Atlas launch announcement for Dana', 'claude', NULL, NULL,
                         '{"now":"2026-06-01T00:00:00Z"}') AS pack);
SELECT '  ' || json_extract(value, '$.ref'), printf('%-11s', json_extract(value, '$.layer')),
       printf('relevance %-5s', CASE WHEN json_type(value, '$.relevance') = 'null' THEN '-'
                                   ELSE printf('%.3f', json_extract(value, '$.relevance')) END),
       json_extract(value, '$.content')
FROM json_each(cmp_context('Draft the Atlas launch announcement for Dana', 'claude', NULL, NULL,
                           '{"now":"2026-06-01T00:00:00Z"}'), '$.items');
