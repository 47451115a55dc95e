-- Where the time of a bulk insert goes, in the sqlite3 shell without the extension:
--   for v in 0 1 2 3 4; do sqlite3 /tmp/write_cost.db "PRAGMA user_version=$v" && sqlite3 /tmp/write_cost.db < sql/write_cost.sql; rm -f /tmp/write_cost.db*; done
-- 20,000 English chat messages, each naming one entity, inserted by one INSERT ... SELECT inside
-- one transaction into a file database; PRAGMA user_version picks the variant (compare `user`):
--   0 cmp's schema as it ships; 1 without the insert trigger of the character-pair index;
--   2 the pair trigger of schema 3 (it matched the view's GLOB class for every row);
--   3 the row table and its indexes only (no insert trigger); 4 a plain FTS5 table.
.read sql/schema.sql
CREATE TEMP TABLE variant AS SELECT user_version AS v FROM pragma_user_version;
CREATE TEMP TABLE src(content TEXT, entities TEXT);
INSERT INTO src SELECT 'Caroline: I went to the LGBTQ support group yesterday and it was so powerful, number '
  || value || '! What about you, Melanie?', '["Caroline"]' FROM generate_series(1, 20000);
CREATE TEMP TABLE steps(sql TEXT);
INSERT INTO steps SELECT 'DROP TRIGGER cmp_memories_ngram_ai' FROM variant WHERE v IN (1, 2, 3);
INSERT INTO steps SELECT 'DROP TRIGGER cmp_memories_ai' FROM variant WHERE v = 3;
.once /tmp/write_cost_steps.sql
SELECT sql || ';' FROM steps;
.read /tmp/write_cost_steps.sql
.once /tmp/write_cost_steps.sql
SELECT 'CREATE TRIGGER cmp_memories_ngram_ai AFTER INSERT ON cmp_memories BEGIN INSERT INTO cmp_memories_ngram(rowid, grams) SELECT rid, grams FROM cmp_memories_grams WHERE rid = NEW.rid; END;' FROM variant WHERE v = 2;
.read /tmp/write_cost_steps.sql
CREATE VIRTUAL TABLE plain USING fts5(content);
SELECT 'variant ' || v || ': ' || CASE v WHEN 0 THEN 'cmp schema 4' WHEN 1 THEN 'without the pair trigger'
  WHEN 2 THEN 'pair trigger of schema 3' WHEN 3 THEN 'row table and indexes only' ELSE 'plain FTS5 table' END FROM variant;
BEGIN;
.timer on
INSERT INTO cmp_memories(content, entities, kind) SELECT content, entities, 'episodic' FROM src WHERE (SELECT v FROM variant) < 4;
INSERT INTO plain(content) SELECT content FROM src WHERE (SELECT v FROM variant) = 4;
.timer off
COMMIT;
