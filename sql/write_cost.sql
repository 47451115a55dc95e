-- Where the time of a bulk insert goes, in the sqlite3 shell (build the extension first,
-- cargo build --release --features loadable_extension), from the repository root:
--   for v in 0 1 2 3 4; do sqlite3 /tmp/write_cost.db "PRAGMA user_version=$v" && sqlite3 /tmp/write_cost.db < sql/write_cost.sql; rm -f /tmp/write_cost.db*; done
-- 20,000 English chat messages, each naming one entity, inserted by one INSERT ... SELECT inside
-- one transaction into a file database; PRAGMA user_version picks the variant (compare `user`):
--   0 cmp's schema as it ships (the insert queues each row for indexing; a row it would replace is
--     queued and its indexed text kept first, schemas 7 and 8);
--   1 the same, then SELECT cmp_flush() (the queued rows indexed, one statement per index);
--   2 the row table and its indexes only (no insert trigger);
--   3 schema 4, whose triggers indexed every row as it was written (tests/fixtures/schema_v4.sql);
--   4 a plain FTS5 table.
.load target/release/libcmp
CREATE TEMP TABLE variant AS SELECT user_version AS v FROM pragma_user_version;
CREATE TEMP TABLE steps(sql TEXT);
INSERT INTO steps SELECT 'SELECT cmp_init();' FROM variant WHERE v <> 3;
INSERT INTO steps SELECT '.read tests/fixtures/schema_v4.sql' FROM variant WHERE v = 3;
INSERT INTO steps SELECT 'DROP TRIGGER cmp_memories_ai; DROP TRIGGER cmp_memories_ai_id; DROP TRIGGER cmp_memories_bi_conflict;' FROM variant WHERE v = 2;
.once /tmp/write_cost_steps.sql
SELECT sql FROM steps;
.read /tmp/write_cost_steps.sql
CREATE TEMP TABLE src(content TEXT, entities TEXT);
INSERT INTO src SELECT 'Caroline: I went to the LGBTQ support group yesterday and it was so powerful, number '
  || value || '! What about you, Melanie?', '["Caroline"]' FROM generate_series(1, 20000);
CREATE VIRTUAL TABLE plain USING fts5(content);
SELECT 'variant ' || v || ': ' || CASE v WHEN 0 THEN 'cmp schema, insert' WHEN 1 THEN 'cmp schema, insert, then cmp_flush()'
  WHEN 2 THEN 'row table and indexes only' WHEN 3 THEN 'schema 4 (indexing triggers)' ELSE 'plain FTS5 table' END FROM variant;
BEGIN;
.timer on
INSERT INTO cmp_memories(content, entities, kind) SELECT content, entities, 'episodic' FROM src WHERE (SELECT v FROM variant) < 4;
INSERT INTO plain(content) SELECT content FROM src WHERE (SELECT v FROM variant) = 4;
SELECT cmp_flush() FROM variant WHERE v = 1;
.timer off
COMMIT;
