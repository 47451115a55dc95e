-- The cmp shell demo. From the repository root, after building the extension:
--   cargo build --release --features loadable_extension
--   sqlite3 :memory: < sql/demo.sql
-- It seeds a small memory store (sql/seed.sql), packs one task for claude, gpt and cursor, shows the
-- constraint floor, a folded restatement and a compressed item, runs a three-turn session, an MQL
-- narrowing chain and a rejected query, and checks each relationship it prints: a failed check
-- stops the script with "JSON path error near '$ FAILED: …'" and a non-zero exit (.bail on).
-- The last line of output is CMP DEMO OK.
.bail on
.load ./target/release/libcmp
.mode list
.headers off
SELECT 'cmp ' || cmp_version() || ', schema v' || cmp_init();
.read sql/seed.sql

CREATE TEMP TABLE demo(k TEXT PRIMARY KEY, v TEXT);
INSERT INTO demo VALUES
  ('task', 'Where does the Atlas launch stand: date, pricing, risks and owners?'),
  ('opts', '{"now":"2026-06-01T00:00:00Z"}');

-- 1. The same task, three models: each at its own profile budget.
CREATE TEMP TABLE packs AS
  SELECT column1 AS model,
         cmp_context((SELECT v FROM demo WHERE k = 'task'), column1, NULL, NULL, (SELECT v FROM demo WHERE k = 'opts')) AS env
  FROM (VALUES ('claude'), ('gpt'), ('cursor'));
SELECT '';
SELECT '== one task, three models: budget cap, items packed, tokens used';
SELECT printf('%-7s budget %5d  items %2d  used %5d  status %s', model, json_extract(env, '$.budget.tokens'),
              json_array_length(env, '$.items'), json_extract(env, '$.budget.used'), json_extract(env, '$.coverage.status'))
FROM packs;
SELECT CASE WHEN (SELECT json_extract(env, '$.budget.tokens') FROM packs WHERE model = 'claude')
               >= (SELECT json_extract(env, '$.budget.tokens') FROM packs WHERE model = 'gpt')
            AND (SELECT json_extract(env, '$.budget.tokens') FROM packs WHERE model = 'gpt')
               >= (SELECT json_extract(env, '$.budget.tokens') FROM packs WHERE model = 'cursor')
       THEN 'check: claude >= gpt >= cursor budgets'
       ELSE json_extract('{}', '$ FAILED: claude >= gpt >= cursor budgets') END;
SELECT CASE WHEN (SELECT json_array_length(env, '$.items') FROM packs WHERE model = 'cursor')
               < (SELECT json_array_length(env, '$.items') FROM packs WHERE model = 'gpt')
       THEN 'check: cursor packs strictly fewer items than gpt under pressure'
       ELSE json_extract('{}', '$ FAILED: cursor packs strictly fewer items') END;
SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM packs WHERE json_extract(env, '$.budget.used') > json_extract(env, '$.budget.tokens'))
       THEN 'check: used <= tokens for every pack'
       ELSE json_extract('{}', '$ FAILED: used <= tokens') END;

-- 2. The cursor pack, item by item: the constraint on top, the fold, the compressed items.
SELECT '';
SELECT '== the cursor pack (layer, ref, relevance, what packing did, content)';
SELECT printf('%-11s %s %-8s %-22s %s', json_extract(i.value, '$.layer'), json_extract(i.value, '$.ref'),
              coalesce(printf('%.3f', json_extract(i.value, '$.relevance')), '-'),
              coalesce('folds ' || json_extract(i.value, '$.why.folded_refs[0]'), 'compressed: ' || json_extract(i.value, '$.why.compressed'), ''),
              substr(json_extract(i.value, '$.content'), 1, 60))
FROM packs, json_each(packs.env, '$.items') AS i WHERE packs.model = 'cursor';
SELECT CASE WHEN (SELECT json_extract(env, '$.items[0].layer') FROM packs WHERE model = 'cursor') = 'constraints'
       THEN 'check: a constraint comes first'
       ELSE json_extract('{}', '$ FAILED: constraint first') END;
SELECT CASE WHEN (SELECT count(*) FROM packs, json_each(packs.env, '$.items') AS i
                  WHERE packs.model = 'claude' AND json_extract(i.value, '$.why.folded_refs') IS NOT NULL) > 0
            AND (SELECT json_extract(env, '$.coverage.deduped') FROM packs WHERE model = 'claude') > 0
       THEN 'check: the restated pricing fact is folded (why.folded_refs, coverage.deduped)'
       ELSE json_extract('{}', '$ FAILED: fold') END;
SELECT CASE WHEN (SELECT count(*) FROM packs, json_each(packs.env, '$.items') AS i
                  WHERE packs.model = 'cursor' AND json_extract(i.value, '$.why.compressed') IS NOT NULL) > 0
       THEN 'check: under the cursor budget some items are compressed, not dropped'
       ELSE json_extract('{}', '$ FAILED: compressed item') END;
SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM packs, json_each(packs.env, '$.items') AS i
                  WHERE json_extract(i.value, '$.ref') IN ('mem_000000000001', 'mem_000000000027', 'mem_000000000028'))
       THEN 'check: never the superseded decision, the redacted row or the other scope'
       ELSE json_extract('{}', '$ FAILED: leak') END;

-- 3. A three-turn session (reference §8.4): tight budget, roomy budget, repeat.
SELECT '';
SELECT '== a three-turn session: new refs, tokens not re-sent';
CREATE TEMP TABLE turns(n INTEGER PRIMARY KEY, env TEXT, full TEXT);
INSERT INTO turns VALUES (1,
  cmp_context((SELECT v FROM demo WHERE k = 'task'), 'claude', 1500, 'chat-42', json_set((SELECT v FROM demo WHERE k = 'opts'), '$.send', 'delta')),
  cmp_context((SELECT v FROM demo WHERE k = 'task'), 'claude', 1500, NULL, (SELECT v FROM demo WHERE k = 'opts')));
INSERT INTO turns VALUES (2,
  cmp_context((SELECT v FROM demo WHERE k = 'task'), 'claude', 11000, 'chat-42', json_set((SELECT v FROM demo WHERE k = 'opts'), '$.send', 'delta')),
  cmp_context((SELECT v FROM demo WHERE k = 'task'), 'claude', 11000, NULL, (SELECT v FROM demo WHERE k = 'opts')));
INSERT INTO turns VALUES (3,
  cmp_context((SELECT v FROM demo WHERE k = 'task'), 'claude', 11000, 'chat-42', json_set((SELECT v FROM demo WHERE k = 'opts'), '$.send', 'delta')),
  cmp_context((SELECT v FROM demo WHERE k = 'task'), 'claude', 11000, NULL, (SELECT v FROM demo WHERE k = 'opts')));
-- Per turn: items of a stateless pack, refs new to the session (the only items send:delta sends),
-- and the tokens of the whole delta output (the legend only on turn 1) against the stateless pack's.
-- (The session's own pack can differ a little from the stateless one: it holds the legend after
-- turn 1 and leaves room for the delta's lists.)
CREATE TEMP VIEW turn_stats AS
  SELECT n,
         json_array_length(full, '$.items') AS packed,
         json_array_length(env, '$.working_memory.new') AS new,
         json_extract(env, '$.working_memory.cursor') AS cursor,
         json_array_length(env, '$.items') AS items_sent,
         json_extract(env, '$.budget.used') AS sent,
         json_extract(full, '$.budget.used') AS stateless
  FROM turns;
SELECT printf('turn %d: stateless pack %2d items  new %2d  cursor %s  tokens sent %5d (stateless %5d, %d not re-sent)',
              n, packed, new, cursor, sent, stateless, stateless - sent) FROM turn_stats;
SELECT CASE WHEN (SELECT new > 0 AND new = items_sent FROM turn_stats WHERE n = 1)
            AND (SELECT new > 0 AND new = items_sent AND new < packed FROM turn_stats WHERE n = 2)
            AND (SELECT new = 0 AND items_sent = 0 AND sent < stateless FROM turn_stats WHERE n = 3)
            AND NOT EXISTS (SELECT 1 FROM turns WHERE json_extract(env, '$.budget.used') != cmp_tokens(env, 'claude'))
            AND (SELECT group_concat(cursor) FROM turn_stats) = '1,2,3'
       THEN 'check: turn 1 all new, turn 2 only the newly fitting refs, turn 3 nothing re-sent'
       ELSE json_extract('{}', '$ FAILED: session deltas') END;
-- Superset: every ref of the tight pack is in the roomy pack.
SELECT CASE WHEN NOT EXISTS (
         SELECT 1 FROM json_each((SELECT full FROM turns WHERE n = 1), '$.items') AS a
         WHERE json_extract(a.value, '$.ref') NOT IN
               (SELECT json_extract(b.value, '$.ref') FROM json_each((SELECT full FROM turns WHERE n = 2), '$.items') AS b))
       THEN 'check: the roomy pack is a superset of the tight pack'
       ELSE json_extract('{}', '$ FAILED: superset') END;

-- 4. MQL: a narrowing chain only removes; an out-of-range filter is rejected.
SELECT '';
SELECT '== MQL narrowing chain (find, k = 25)';
CREATE TEMP TABLE chain(step INTEGER PRIMARY KEY, label TEXT, result TEXT);
INSERT INTO chain VALUES
  (1, 'no filter          ', cmp_query('{"find":"Atlas launch billing risks","k":25,"now":"2026-06-01T00:00:00Z"}')),
  (2, 'min_relevance 0.5  ', cmp_query('{"find":"Atlas launch billing risks","k":25,"now":"2026-06-01T00:00:00Z","min_relevance":0.5}')),
  (3, 'min_relevance 0.8  ', cmp_query('{"find":"Atlas launch billing risks","k":25,"now":"2026-06-01T00:00:00Z","min_relevance":0.8}'));
SELECT printf('%s returned %2d (narrowed_from %d -> narrowed_to %d)', label, json_extract(result, '$.coverage.returned'),
              json_extract(result, '$.coverage.narrowed_from'), json_extract(result, '$.coverage.narrowed_to')) FROM chain;
SELECT CASE WHEN NOT EXISTS (
         SELECT 1 FROM chain AS a JOIN chain AS b ON b.step = a.step + 1, json_each(b.result, '$.items') AS i
         WHERE json_extract(i.value, '$.ref') NOT IN (SELECT json_extract(j.value, '$.ref') FROM json_each(a.result, '$.items') AS j))
         AND (SELECT json_extract(result, '$.coverage.returned') FROM chain WHERE step = 1)
             > (SELECT json_extract(result, '$.coverage.returned') FROM chain WHERE step = 3)
       THEN 'check: each step is a subset of the one before, and the chain narrows'
       ELSE json_extract('{}', '$ FAILED: narrowing chain') END;
SELECT 'rejected, never clamped: cmp_query(''{"find":"Atlas","min_relevance":2.5}'') says';
-- Run in a child shell, so the demo can show the error and go on.
.system sqlite3 :memory: ".load ./target/release/libcmp" "select cmp_query(json_object('find','Atlas','min_relevance',2.5));" 2>&1 | sed 's/^/  /'

SELECT '';
SELECT 'CMP DEMO OK';
