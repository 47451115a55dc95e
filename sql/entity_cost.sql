-- What a change to the entity set costs the next read, in the sqlite3 shell (build the extension
-- first: cargo build --release --features loadable_extension), from the repository root:
--   sqlite3 /tmp/entity_cost.db < sql/entity_cost.sql; rm -f /tmp/entity_cost.db*
-- 100,000 memories, each naming an entity of its own (a store that records everyone its user met).
-- The first read builds the entity gazetteer (an fst over every name) and keeps it; the next reads
-- use it; a read after a change to the entity set builds it again. The task matches no memory, so
-- the calls cost little else: compare the `real` times of the four timed calls.
.load target/release/libcmp
SELECT cmp_init();
INSERT INTO cmp_memories(content, entities)
  SELECT 'Met Person ' || value || ' Smith at the fair', json_array('Person ' || value || ' Smith')
  FROM generate_series(1, 100000);
SELECT cmp_flush();
.timer on
SELECT 'first read', length(cmp_context('what about the weather', NULL, 1000)) > 0;
SELECT 'next read', length(cmp_context('what about the weather', NULL, 1000)) > 0;
.timer off
INSERT INTO cmp_memories(content, entities) VALUES ('Met a newcomer', '["Newcomer"]');
.timer on
SELECT 'after a new entity', length(cmp_context('what about the weather', NULL, 1000)) > 0;
SELECT 'next read', length(cmp_context('what about the weather', NULL, 1000)) > 0;
.timer off
