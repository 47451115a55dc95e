-- What the in-process embedder costs (BENCHMARKS.md, "With an embedding model"): loading a model,
-- embedding every memory of the seed store, and a search with the `embedder` option, first and
-- again (the task's embedding is then remembered). The model folder comes in as :dir:
--   cargo build --release --features loadable_extension
--   sqlite3 -cmd ".param set :dir '$(bash .ci/model.sh)'" :memory: < sql/embed_cost.sql
.load target/release/libcmp
SELECT cmp_init();
.read sql/seed.sql
SELECT count(*) || ' memories, ' || sum(length(content)) || ' characters' FROM cmp_memories;
.timer on
SELECT 'load the model: ' || length(cmp_embed('warm up', :dir)) || ' bytes';
UPDATE cmp_memories SET embedding = cmp_embed(content, :dir);
SELECT 'search without: ' || count(*) FROM cmp_search('when does Atlas launch', json_object('now', '2026-06-01T00:00:00Z'));
SELECT 'search with, first: ' || count(*) FROM cmp_search('when does Atlas launch', json_object('embedder', :dir, 'now', '2026-06-01T00:00:00Z'));
SELECT 'search with, again: ' || count(*) FROM cmp_search('when does Atlas launch', json_object('embedder', :dir, 'now', '2026-06-01T00:00:00Z'));
