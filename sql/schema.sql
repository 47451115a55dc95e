-- cmp schema. Applied by `SELECT cmp_init();` on every open: every statement is idempotent, so
-- running it on an older version upgrades in place (the Rust side runs version-specific steps first
-- and records the version in cmp_meta). Every write is kept right by plain-SQL triggers, so a
-- connection that never loaded the extension writes correctly. The triggers write plain tables only,
-- never a full-text index (schema 8): they queue the rids a write touches (cmp_pending) and keep the
-- indexed text of a row that changed or went (cmp_stale); the extension brings the indexes up to
-- date before it reads. So a write that fails leaves no full-text write to roll back, and
-- `PRAGMA trusted_schema = OFF` does not refuse writes.

CREATE TABLE IF NOT EXISTS cmp_meta(
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS cmp_memories(
  id            TEXT UNIQUE DEFAULT ('mem_' || lower(hex(randomblob(6)))),
  content       TEXT NOT NULL,
  summary       TEXT,
  kind          TEXT NOT NULL DEFAULT 'semantic'
                CHECK (kind IN ('semantic','episodic','style','decision','preference','negative','procedural')),
  occurred_at   TEXT,
  captured_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  source_url    TEXT,
  confidence    REAL,
  trust         REAL DEFAULT 0.5,
  entities      TEXT,
  superseded_by TEXT,
  superseded_at TEXT,
  conflict      INTEGER NOT NULL DEFAULT 0,
  redacted      INTEGER NOT NULL DEFAULT 0,
  scope         TEXT NOT NULL DEFAULT 'default',
  embedding     BLOB,
  -- An explicit INTEGER PRIMARY KEY: VACUUM may renumber implicit rowids, and the FTS5 index
  -- (external content) is keyed on this column, so it must be stable.
  rid           INTEGER PRIMARY KEY
);

CREATE INDEX IF NOT EXISTS cmp_memories_scope_time
  ON cmp_memories(scope, coalesce(occurred_at, captured_at));
-- Hard rules (kind 'negative') reach every pack of their scope, matched or not.
CREATE INDEX IF NOT EXISTS cmp_memories_rules
  ON cmp_memories(scope, coalesce(occurred_at, captured_at)) WHERE kind = 'negative';
CREATE INDEX IF NOT EXISTS cmp_memories_superseded_by
  ON cmp_memories(superseded_by) WHERE superseded_by IS NOT NULL;

-- The index queue (schema 5). A write does not index: its triggers queue the rids it touches here,
-- and the extension brings every queued rid's index entries (word index, character-pair index,
-- entity links) up to date with one statement per index, at the next read on a connection that can
-- write or at `SELECT cmp_flush()`. One statement per index instead of one per row is what makes a
-- bulk load cheap: a full-text insert made by a trigger writes a new index segment for every row. A
-- rid is queued when a row is inserted there, when its row's text, entities, redaction or rid
-- change (the old rid and the new), and when its row is deleted; only the extension empties the
-- queue. A queued rid's row, if it still has one, is not in the indexes (its old entries may be:
-- cmp_stale), so reads take index matches only of rows that are not queued.
CREATE TABLE IF NOT EXISTS cmp_pending(rid INTEGER PRIMARY KEY);

-- The indexed text of rows changed, replaced or deleted since the indexes were last brought up to
-- date (schema 8): the entries the indexes still hold for them, which the extension removes before
-- it indexes the queue. Every rid here is also queued.
CREATE TABLE IF NOT EXISTS cmp_stale(rid INTEGER PRIMARY KEY, content TEXT NOT NULL);

-- The rows the indexes hold as they are: rows that may surface and are not queued. A redacted row is
-- not indexed, so once the queue is indexed it cannot even shift the BM25 statistics of other rows.
CREATE VIEW IF NOT EXISTS cmp_memories_indexed AS
  SELECT rid, content FROM cmp_memories
  WHERE (redacted = 0 OR redacted IS NULL) AND rid NOT IN (SELECT rid FROM cmp_pending);

-- What the word index holds: those rows, and the old text of the stale ones (a stale rid has no
-- indexed row: it is queued). `rebuild` and `integrity-check` read this view.
CREATE VIEW IF NOT EXISTS cmp_memories_indexable AS
  SELECT rid, content FROM cmp_memories_indexed
  UNION ALL SELECT rid, content FROM cmp_stale;

CREATE VIRTUAL TABLE IF NOT EXISTS cmp_memories_fts USING fts5(
  content,
  content = 'cmp_memories_indexable',
  content_rowid = 'rid',
  tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Entities named by memories (from the `entities` JSON array). `norm` makes "Atlas" and "atlas" one entity.
CREATE TABLE IF NOT EXISTS cmp_entities(
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  norm TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS cmp_memory_entities(
  entity_id INTEGER NOT NULL,
  rid       INTEGER NOT NULL,
  PRIMARY KEY (entity_id, rid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS cmp_memory_entities_rid ON cmp_memory_entities(rid);

CREATE TABLE IF NOT EXISTS cmp_tasks(
  id       TEXT PRIMARY KEY DEFAULT ('task_' || lower(hex(randomblob(6)))),
  title    TEXT NOT NULL,
  status   TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open','done')),
  due_at   TEXT,
  scope    TEXT NOT NULL DEFAULT 'default',
  entities TEXT
);

-- Session working sets (the working_memory delta channel) and content-addressed pins.
CREATE TABLE IF NOT EXISTS cmp_sessions(
  session_id TEXT NOT NULL,
  scope      TEXT NOT NULL,
  turn       INTEGER NOT NULL,
  cursor     INTEGER NOT NULL,
  state      TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (session_id, scope)
);
CREATE TABLE IF NOT EXISTS cmp_pins(
  sha        TEXT PRIMARY KEY,
  bytes      TEXT NOT NULL,
  created_at TEXT NOT NULL
);

INSERT OR IGNORE INTO main.cmp_meta(key, value) VALUES ('entity_gen', '0');
INSERT OR IGNORE INTO main.cmp_meta(key, value) VALUES ('db_id', lower(hex(randomblob(16))));
INSERT OR IGNORE INTO main.cmp_meta(key, value) VALUES ('secret', lower(hex(randomblob(32))));

-- ---------------------------------------------------------------- triggers
-- A row is indexed when it may surface and is not queued; only an indexed row has entries to
-- remove, and its text is kept in cmp_stale for that. The triggers skip a rid already queued with an
-- upsert (`ON CONFLICT DO NOTHING`), not `INSERT OR IGNORE`: a trigger's statements take the `OR`
-- policy of the statement that fired them when it names one (`INSERT OR ABORT` would fail on a rid
-- already queued), not its upsert. An entity goes with the last link to it; the links, not the
-- row's `entities` text, say which (the triggers call no JSON function, which SQLite 3.40 does not
-- allow in a trigger under `trusted_schema = OFF`).
CREATE TRIGGER IF NOT EXISTS cmp_memories_ai AFTER INSERT ON cmp_memories BEGIN
  INSERT INTO cmp_pending(rid) VALUES (NEW.rid) ON CONFLICT DO NOTHING;
END;
CREATE TRIGGER IF NOT EXISTS cmp_memories_ai_id AFTER INSERT ON cmp_memories WHEN NEW.id IS NULL BEGIN
  UPDATE cmp_memories SET id = 'mem_' || lower(hex(randomblob(6))) WHERE rid = NEW.rid;
END;

CREATE TRIGGER IF NOT EXISTS cmp_memories_ad AFTER DELETE ON cmp_memories BEGIN
  INSERT INTO cmp_stale(rid, content)
    SELECT OLD.rid, OLD.content
    WHERE (OLD.redacted = 0 OR OLD.redacted IS NULL) AND NOT EXISTS (SELECT 1 FROM cmp_pending WHERE rid = OLD.rid)
  ON CONFLICT DO NOTHING;
  DELETE FROM cmp_entities WHERE id IN (SELECT entity_id FROM cmp_memory_entities WHERE rid = OLD.rid)
    AND NOT EXISTS (SELECT 1 FROM cmp_memory_entities AS l WHERE l.entity_id = cmp_entities.id AND l.rid <> OLD.rid);
  DELETE FROM cmp_memory_entities WHERE rid = OLD.rid;
  INSERT INTO cmp_pending(rid) VALUES (OLD.rid) ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER IF NOT EXISTS cmp_memories_au AFTER UPDATE ON cmp_memories
WHEN OLD.content IS NOT NEW.content OR OLD.redacted IS NOT NEW.redacted OR OLD.rid IS NOT NEW.rid
  OR OLD.entities IS NOT NEW.entities
BEGIN
  INSERT INTO cmp_stale(rid, content)
    SELECT OLD.rid, OLD.content
    WHERE (OLD.redacted = 0 OR OLD.redacted IS NULL) AND NOT EXISTS (SELECT 1 FROM cmp_pending WHERE rid = OLD.rid)
  ON CONFLICT DO NOTHING;
  DELETE FROM cmp_entities WHERE id IN (SELECT entity_id FROM cmp_memory_entities WHERE rid = OLD.rid)
    AND NOT EXISTS (SELECT 1 FROM cmp_memory_entities AS l WHERE l.entity_id = cmp_entities.id AND l.rid <> OLD.rid);
  DELETE FROM cmp_memory_entities WHERE rid = OLD.rid;
  INSERT INTO cmp_pending(rid) VALUES (OLD.rid), (NEW.rid) ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER IF NOT EXISTS cmp_memories_au_id AFTER UPDATE OF id ON cmp_memories
WHEN NEW.id IS NULL
BEGIN
  UPDATE cmp_memories SET id = 'mem_' || lower(hex(randomblob(6))) WHERE rid = NEW.rid;
END;

-- REPLACE (`INSERT OR REPLACE`, `REPLACE INTO`, `UPDATE OR REPLACE`) deletes the row it conflicts
-- with without running that row's delete triggers, unless the writing connection has `PRAGMA
-- recursive_triggers` on (SQLite's rule): its index entries and entity links stayed behind, and a
-- row that later took its rid was found by the old row's words (schema 7). So before a write that
-- conflicts on `id` or `rid`, the row it conflicts with is queued and its indexed text kept, as a
-- changed row's is: when the write replaces it, the next flush removes its entries; when the write
-- is refused the statement's changes roll back; when it is ignored, the next flush indexes the row
-- again.
CREATE TRIGGER IF NOT EXISTS cmp_memories_bi_conflict BEFORE INSERT ON cmp_memories
WHEN EXISTS (SELECT 1 FROM cmp_memories WHERE id = NEW.id OR rid = NEW.rid)
BEGIN
  INSERT INTO cmp_stale(rid, content)
    SELECT rid, content FROM cmp_memories_indexed
    WHERE rid IN (SELECT rid FROM cmp_memories WHERE id = NEW.id OR rid = NEW.rid)
  ON CONFLICT DO NOTHING;
  DELETE FROM cmp_entities
    WHERE id IN (SELECT entity_id FROM cmp_memory_entities
                 WHERE rid IN (SELECT rid FROM cmp_memories WHERE id = NEW.id OR rid = NEW.rid))
      AND NOT EXISTS (SELECT 1 FROM cmp_memory_entities AS l WHERE l.entity_id = cmp_entities.id
                        AND l.rid NOT IN (SELECT rid FROM cmp_memories WHERE id = NEW.id OR rid = NEW.rid));
  DELETE FROM cmp_memory_entities WHERE rid IN (SELECT rid FROM cmp_memories WHERE id = NEW.id OR rid = NEW.rid);
  INSERT INTO cmp_pending(rid)
    SELECT rid FROM cmp_memories WHERE id = NEW.id OR rid = NEW.rid ON CONFLICT DO NOTHING;
END;
CREATE TRIGGER IF NOT EXISTS cmp_memories_bu_conflict BEFORE UPDATE OF id, rid ON cmp_memories
WHEN EXISTS (SELECT 1 FROM cmp_memories WHERE (id = NEW.id OR rid = NEW.rid) AND rid <> OLD.rid)
BEGIN
  INSERT INTO cmp_stale(rid, content)
    SELECT rid, content FROM cmp_memories_indexed
    WHERE rid IN (SELECT rid FROM cmp_memories WHERE (id = NEW.id OR rid = NEW.rid) AND rid <> OLD.rid)
  ON CONFLICT DO NOTHING;
  DELETE FROM cmp_entities
    WHERE id IN (SELECT entity_id FROM cmp_memory_entities
                 WHERE rid IN (SELECT rid FROM cmp_memories WHERE (id = NEW.id OR rid = NEW.rid) AND rid <> OLD.rid))
      AND NOT EXISTS (SELECT 1 FROM cmp_memory_entities AS l WHERE l.entity_id = cmp_entities.id
                        AND l.rid NOT IN (SELECT rid FROM cmp_memories
                                          WHERE (id = NEW.id OR rid = NEW.rid) AND rid <> OLD.rid));
  DELETE FROM cmp_memory_entities
    WHERE rid IN (SELECT rid FROM cmp_memories WHERE (id = NEW.id OR rid = NEW.rid) AND rid <> OLD.rid);
  INSERT INTO cmp_pending(rid)
    SELECT rid FROM cmp_memories
    WHERE (id = NEW.id OR rid = NEW.rid) AND rid <> OLD.rid ON CONFLICT DO NOTHING;
END;

-- The entity gazetteer (an fst built by the extension) is rebuilt only when this value changes.
-- Each change of the entity set draws a new random value (schema 6; a counter before): a counter
-- that a rolled-back change had moved came back, after another change, to a value a gazetteer had
-- been built at, with other entities.
CREATE TRIGGER IF NOT EXISTS cmp_entities_ai AFTER INSERT ON cmp_entities BEGIN
  UPDATE cmp_meta SET value = CAST(random() AS TEXT) WHERE key = 'entity_gen';
END;
CREATE TRIGGER IF NOT EXISTS cmp_entities_ad AFTER DELETE ON cmp_entities BEGIN
  UPDATE cmp_meta SET value = CAST(random() AS TEXT) WHERE key = 'entity_gen';
END;

CREATE TRIGGER IF NOT EXISTS cmp_tasks_ai AFTER INSERT ON cmp_tasks WHEN NEW.id IS NULL BEGIN
  UPDATE cmp_tasks SET id = 'task_' || lower(hex(randomblob(6))) WHERE rowid = NEW.rowid;
END;

-- ---------------------------------------------------------------- character-pair index (schema 3)
-- Scripts written without spaces (Han, Hiragana/Katakana, Hangul, Thai) have no word boundaries for
-- the word index to see: `unicode61` makes a whole run of Han characters one token, so no task word
-- ever matches it. Rows holding such text are also indexed by their pairs of adjacent characters
-- (letters, digits and those scripts): most Chinese words are two characters, and a pair of digits
-- or of letters glued to Han text ("61岁", "用Python") is found too. The pairs are computed in plain
-- SQL over a table of positions, so a connection that never loaded the extension keeps this index
-- right as well; only the first 2048 characters of a row are paired (bounded cost per write).
--
-- The GLOB classes below are literal (a pattern built with char() would be rebuilt for every
-- character). Letters and digits: 0-9 A-Z a-z U+00C0-U+00D6 U+00D8-U+00F6 U+00F8-U+024F. Spaceless
-- scripts: U+0E00-0E7F Thai, U+1100-11FF Hangul jamo, U+3040-30FF Hiragana/Katakana, U+3130-318F
-- Hangul compatibility jamo, U+31F0-31FF Katakana extensions, U+3400-4DBF CJK extension A,
-- U+4E00-9FFF CJK ideographs, U+AC00-D7AF Hangul syllables, U+F900-FAFF CJK compatibility
-- ideographs, U+FF66-FF9F halfwidth Katakana, U+20000-3FFFF CJK extensions B and later (the ranges of
-- `text::is_spaceless`).
CREATE TABLE IF NOT EXISTS cmp_positions(i INTEGER PRIMARY KEY);
INSERT OR IGNORE INTO main.cmp_positions(i)
  WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2047) SELECT i FROM n;

-- The indexed text of each row: its character pairs, separated by spaces. Only the rows of
-- cmp_memories_indexable (indexed, or stale with their old text) that hold a character of a
-- spaceless script are here. A text whose bytes are as many as its characters holds no character
-- outside ASCII (any byte of one is either a lead byte followed by continuation bytes, or decodes to
-- U+FFFD), so that test skips it before the GLOB class, which costs more (schema 4). The row's cut
-- text is read once (a LIMIT keeps the subquery from being merged into the loop), then each
-- position costs one substr and one GLOB.
CREATE VIEW IF NOT EXISTS cmp_memories_grams AS
  SELECT m.rid AS rid,
         (SELECT group_concat(substr(x.t, p.i, 2), ' ')
            FROM (SELECT substr(m.content, 1, 2048) AS t LIMIT 1) AS x, cmp_positions AS p
           WHERE p.i < length(x.t)
             AND substr(x.t, p.i, 2) GLOB '[0-9A-Za-zÀ-ÖØ-öø-ɏ฀-๿ᄀ-ᇿ぀-ヿ㄰-㆏ㇰ-ㇿ㐀-䶿一-鿿가-힯豈-﫿ｦ-ﾟ𠀀-𿿿][0-9A-Za-zÀ-ÖØ-öø-ɏ฀-๿ᄀ-ᇿ぀-ヿ㄰-㆏ㇰ-ㇿ㐀-䶿一-鿿가-힯豈-﫿ｦ-ﾟ𠀀-𿿿]') AS grams
  FROM cmp_memories_indexable AS m
  WHERE length(CAST(m.content AS BLOB)) <> length(CAST(m.content AS TEXT))
    AND m.content GLOB '*[฀-๿ᄀ-ᇿ぀-ヿ㄰-㆏ㇰ-ㇿ㐀-䶿一-鿿가-힯豈-﫿ｦ-ﾟ𠀀-𿿿]*';

CREATE VIRTUAL TABLE IF NOT EXISTS cmp_memories_ngram USING fts5(
  grams,
  content = 'cmp_memories_grams',
  content_rowid = 'rid',
  tokenize = 'unicode61 remove_diacritics 2'
);

