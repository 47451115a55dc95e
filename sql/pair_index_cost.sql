-- Write cost of the character-pair index, in the sqlite3 shell without the extension:
--   sqlite3 :memory: < sql/pair_index_cost.sql
-- 1000 rows each of 30-character Chinese, 600-character Chinese and English text, inserted with the
-- pair index's insert trigger, then again without it. Compare the `user` times of the same kind.
.read sql/schema.sql
.print with the character-pair index: 30-char Chinese, 600-char Chinese, English
.timer on
INSERT INTO cmp_memories(content) SELECT substr(replace(hex(zeroblob(600)), '00', '我下周二要去北京出差住在王府井附近的酒店'), 1, 30) || value FROM generate_series(1, 1000);
INSERT INTO cmp_memories(content) SELECT substr(replace(hex(zeroblob(600)), '00', '我下周二要去北京出差住在王府井附近的酒店'), 1, 600) || value FROM generate_series(1, 1000);
INSERT INTO cmp_memories(content) SELECT 'Dana owns the Atlas launch announcement post and ships it on Friday ' || value FROM generate_series(1, 1000);
.timer off
DROP TRIGGER cmp_memories_ngram_ai;
.print without it: 30-char Chinese, 600-char Chinese, English
.timer on
INSERT INTO cmp_memories(content) SELECT substr(replace(hex(zeroblob(600)), '00', '我下周二要去北京出差住在王府井附近的酒店'), 1, 30) || value FROM generate_series(1, 1000);
INSERT INTO cmp_memories(content) SELECT substr(replace(hex(zeroblob(600)), '00', '我下周二要去北京出差住在王府井附近的酒店'), 1, 600) || value FROM generate_series(1, 1000);
INSERT INTO cmp_memories(content) SELECT 'Dana owns the Atlas launch announcement post and ships it on Friday ' || value FROM generate_series(1, 1000);
