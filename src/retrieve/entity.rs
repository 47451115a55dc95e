//! Entity retrieval: entity names found in the task (an fst gazetteer over `cmp_entities`, rebuilt
//! only when the entity set changed) → the memories linked to them (SQL in [`crate::store::entities`]).

use super::pool::{Pool, Ranking};
use super::Query;
use crate::store::{entities, schema};
use crate::text;
use fst::raw::Fst;
use rusqlite::Connection;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

/// What the entity retriever found.
#[derive(Debug, Default)]
pub struct Entities {
    /// Memories linked to a selective entity named in the task, best first.
    pub ranking: Ranking,
    /// Full-text matches that name a common entity of the task, in full-text order: they are
    /// boosted within the full-text ranking ([`boost_named`]), not ranked on their own.
    pub named: Ranking,
    /// Entity names recognised in the task, in order of first mention.
    pub names: Vec<String>,
}

/// The entity ranking: memories linked to a selective entity named in the task; and the full-text
/// matches `fts` that name a common one. `task` is the task's hashing embedding.
pub fn rank(
    conn: &Connection,
    q: &Query<'_>,
    fts: &[usize],
    task: &[f32],
    pool: &mut Pool,
) -> rusqlite::Result<Entities> {
    let gz = gazetteer(conn)?;
    let (entity_ids, names) = if gz.is_empty() { (Vec::new(), Vec::new()) } else { gz.find(q.task) };
    let (selective, common) = split_common(conn, q.scope, &entity_ids)?;
    let ranking = linked_ranking(conn, q, &selective, task, pool)?;
    let mut named = Vec::new();
    if !common.is_empty() {
        let rids: Vec<i64> = fts.iter().map(|&i| pool.mems[i].rid).collect();
        let linked = entities::linked(conn, &common, &rids)?;
        named = fts.iter().copied().filter(|&i| linked.contains(&pool.mems[i].rid)).collect();
    }
    Ok(Entities { ranking, named, names })
}

/// How much a common entity named in the task strengthens a full-text match that names it: its
/// BM25 strength counts `1 + COMMON_BOOST` times. A common entity (a speaker of a two-person chat)
/// says little on its own, so it settles near-ties among matches of the task's other words instead
/// of voting in the fusion, where one vote lifted every weak match naming it above a strong match
/// that does not (a question that names the wrong person lost its evidence). BENCHMARKS.md,
/// "Common entities", shows the sweep on LoCoMo and realtalk-dev.
pub const COMMON_BOOST: f64 = 0.25;

/// The boost instead of [`COMMON_BOOST`] when the strongest full-text match names the entity too:
/// the text agrees with the name ("What are Kevin's favourite sportsmen?" asked of a chat where
/// Kevin's own message is the best match), so the entity's other matches count one and a half
/// times their BM25 strength against matches of the task's words that do not name it. The
/// strongest match keeps its place: it is boosted as much. When the strongest match does not name
/// the entity (the task may name the wrong person), the boost stays [`COMMON_BOOST`]. Measured on
/// LoCoMo and realtalk-dev alike (BENCHMARKS.md, "Common entities").
pub const COMMON_BOOST_AGREE: f64 = 0.5;

/// Share of the strongest full-text match's strength a match naming a common entity needs for that
/// entity to vote for it in the fusion (as a selective entity votes for its memories).
pub const NAMED_VOTE_FLOOR: f64 = 0.6;

/// Each full-text match with its strength and whether it names a common entity of the task (is in
/// `named`); None without strengths (the character-pair index ranked too).
fn flagged(fts: &[usize], strength: &[f64], named: &[usize]) -> Option<Vec<(usize, f64, bool)>> {
    if strength.len() != fts.len() {
        return None;
    }
    let named: HashSet<usize> = named.iter().copied().collect();
    Some(fts.iter().zip(strength).map(|(&i, &s)| (i, s, named.contains(&i))).collect())
}

/// The matches of `named` (in full-text order) at least [`NAMED_VOTE_FLOOR`] as strong as the
/// strongest full-text match: the ones a common entity votes for (none without strengths).
pub fn named_votes(fts: &[usize], strength: &[f64], named: &[usize]) -> Ranking {
    let Some(v) = flagged(fts, strength, named) else { return Vec::new() };
    let top = strength.iter().copied().fold(0.0, f64::max);
    let floor = super::knob("CMP_NAMED_FLOOR", NAMED_VOTE_FLOOR) * top;
    v.into_iter().filter(|&(_, s, n)| n && s >= floor).map(|(i, _, _)| i).collect()
}

/// The selective entities' `ranking`, then the full-text matches a common entity votes for
/// ([`named_votes`]) that it does not hold yet.
pub fn with_votes(mut ranking: Ranking, lexical: &super::fts::Lexical, named: &[usize]) -> Ranking {
    let mut have: HashSet<usize> = ranking.iter().copied().collect();
    for i in named_votes(&lexical.ranking, &lexical.strength, named) {
        if have.insert(i) {
            ranking.push(i);
        }
    }
    ranking
}

/// The full-text ranking `fts` (strengths `strength`, parallel to it) reordered with the matches in
/// `named` strengthened by [`COMMON_BOOST`], or by [`COMMON_BOOST_AGREE`] when the strongest match
/// is among them; unchanged without strengths or when nothing is named. Equal strengths keep their
/// order.
pub fn boost_named(fts: &[usize], strength: &[f64], named: &[usize]) -> Ranking {
    let flagged = if named.is_empty() { None } else { flagged(fts, strength, named) };
    let Some(mut v) = flagged else { return fts.to_vec() };
    let top = strength.iter().copied().fold(0.0, f64::max);
    let agrees = v.iter().find(|&&(_, s, _)| s == top).is_some_and(|&(_, _, n)| n);
    let boost = 1.0
        + if agrees {
            super::knob("CMP_BOOST_AGREE", COMMON_BOOST_AGREE)
        } else {
            super::knob("CMP_COMMON_BOOST", COMMON_BOOST)
        };
    for (_, s, n) in &mut v {
        if *n {
            *s *= boost;
        }
    }
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v.into_iter().map(|(i, _, _)| i).collect()
}

/// The memories linked to `entity_ids`: more task entities first, then closeness to the task text
/// (hashing embedder), then newest. A bare link says little; the text says which link matters.
fn linked_ranking(
    conn: &Connection,
    q: &Query<'_>,
    entity_ids: &[i64],
    task: &[f32],
    pool: &mut Pool,
) -> rusqlite::Result<Ranking> {
    let rows = entities::memories_linked(conn, q.reader(), entity_ids, ENTITY_LIMIT)?;
    let mut scored: Vec<(i64, f32, usize)> = Vec::with_capacity(rows.len());
    for (m, hits) in rows {
        let i = pool.add(m);
        scored.push((hits, pool.cosine(i, task), i));
    }
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(b.1.total_cmp(&a.1))
            .then_with(|| pool.when(b.2).cmp(pool.when(a.2)))
            .then_with(|| pool.id(a.2).cmp(pool.id(b.2)))
    });
    Ok(scored.into_iter().map(|s| s.2).collect())
}

/// Most memories one task's entities can bring in.
pub const ENTITY_LIMIT: usize = 200;
/// An entity linked to more than this share of the store's memories, or to more than
/// [`ENTITY_LIMIT`] (and always to more than [`COMMON_MIN_LINKS`]), is *common*: like a stopword, it
/// is too unselective to admit memories on its own. It still re-ranks: memories other retrievers found
/// that name it rank higher.
pub const COMMON_SHARE: f64 = 0.10;
/// Below this many links an entity is never common (small stores keep entity retrieval).
pub const COMMON_MIN_LINKS: i64 = 20;
/// Longest entity name, in words, that the gazetteer recognises.
const MAX_NAME_WORDS: usize = 8;
/// Most entities (and most names) one task is read as naming: a task naming thousands of entities,
/// or a name that thousands of spellings share, costs what a task naming a few does.
pub const MAX_TASK_ENTITIES: usize = 64;

/// Entity names → entity ids, as an fst keyed on normalised names (words joined by one space).
pub struct Gazetteer {
    fst: Fst<Vec<u8>>,
    ids: Vec<Vec<i64>>,
    names: Vec<String>,
}

impl Gazetteer {
    /// Builds the gazetteer from (id, name) pairs.
    pub fn build(entities: impl IntoIterator<Item = (i64, String)>) -> Self {
        // (key, order read, id, name): sorted by key, then as read, so a key's first name is the one
        // read first.
        let mut all: Vec<(String, usize, i64, String)> = Vec::new();
        for (n, (id, name)) in entities.into_iter().enumerate() {
            let key = key_of(&name);
            if !key.is_empty() {
                all.push((key, n, id, name));
            }
        }
        all.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut ids: Vec<Vec<i64>> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut builder = fst::MapBuilder::memory();
        let mut last: Option<String> = None;
        for (key, _, id, name) in all {
            if last.as_deref() == Some(key.as_str()) {
                if let Some(v) = ids.last_mut() {
                    v.push(id);
                }
                continue;
            }
            // Keys come sorted and unique here, so insert cannot fail.
            let _ = builder.insert(key.as_bytes(), names.len() as u64);
            ids.push(vec![id]);
            names.push(name);
            last = Some(key);
        }
        let bytes = builder.into_inner().unwrap_or_default();
        let fst = Fst::new(bytes).unwrap_or_else(|_| empty_fst());
        Gazetteer { fst, ids, names }
    }

    /// Number of distinct normalised names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when there are no names.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Entities named in `task`: (entity ids, display names), in order of first mention, at most
    /// [`MAX_TASK_ENTITIES`] of each.
    pub fn find(&self, task: &str) -> (Vec<i64>, Vec<String>) {
        let words = text::words(task);
        let (mut ids, mut names) = (Vec::new(), Vec::new());
        let (mut seen_ids, mut seen_keys) = (HashSet::new(), HashSet::new());
        let mut i = 0;
        while i < words.len() && (ids.len() < MAX_TASK_ENTITIES || names.len() < MAX_TASK_ENTITIES) {
            let mut node = self.fst.root();
            let mut out = fst::raw::Output::zero();
            let mut best: Option<(usize, u64)> = None;
            'walk: for (j, w) in words.iter().enumerate().skip(i).take(MAX_NAME_WORDS) {
                let sep: &[u8] = if j > i { b" " } else { b"" };
                for &b in sep.iter().chain(w.as_bytes()) {
                    match node.find_input(b) {
                        Some(t) => {
                            let tr = node.transition(t);
                            out = out.cat(tr.out);
                            node = self.fst.node(tr.addr);
                        }
                        None => break 'walk,
                    }
                }
                if node.is_final() {
                    best = Some((j, out.cat(node.final_output()).value()));
                }
            }
            match best {
                Some((end, v)) => {
                    let v = v as usize;
                    for id in &self.ids[v] {
                        if ids.len() < MAX_TASK_ENTITIES && seen_ids.insert(*id) {
                            ids.push(*id);
                        }
                    }
                    if names.len() < MAX_TASK_ENTITIES && seen_keys.insert(v) {
                        names.push(self.names[v].clone());
                    }
                    i = end + 1;
                }
                None => i += 1,
            }
        }
        (ids, names)
    }
}

/// The gazetteer's key of an entity name: its words joined by one space.
fn key_of(name: &str) -> String {
    let mut key = String::new();
    text::map_words(name, |w| {
        if !key.is_empty() {
            key.push(' ');
        }
        key.push_str(w);
    });
    key
}

fn empty_fst() -> Fst<Vec<u8>> {
    let b = fst::raw::Builder::memory();
    b.into_fst()
}

type Cache = Mutex<HashMap<String, (i64, Arc<Gazetteer>)>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The gazetteer of this database, rebuilt only when `cmp_meta.entity_gen` moved.
pub fn gazetteer(conn: &Connection) -> rusqlite::Result<Arc<Gazetteer>> {
    let (db_id, gen) = schema::entity_generation(conn)?;
    // A copy of a database (VACUUM INTO, file copy) shares db_id; the path tells the copies apart.
    let key = format!("{db_id}\u{0}{}", conn.path().unwrap_or(""));
    if let Ok(c) = cache().lock() {
        if let Some((g, gz)) = c.get(&key) {
            if *g == gen {
                return Ok(gz.clone());
            }
        }
    }
    let gz = Arc::new(Gazetteer::build(entities::all(conn)?));
    if let Ok(mut c) = cache().lock() {
        if c.len() > 64 {
            c.clear();
        }
        c.insert(key, (gen, gz.clone()));
    }
    Ok(gz)
}

/// Splits entity ids into (selective, common) by how many memories of `scope` link to them, against
/// the size of the scope: its rows that are not redacted (links skip redacted rows too), so that
/// redacted rows shift nothing. A store of one scope is measured by the word index's own count (one
/// small read) and links are counted without reading the memories; when other scopes hold rows,
/// only `scope`'s rows are counted, so what they hold changes nothing a reader of `scope` gets.
pub fn split_common(conn: &Connection, scope: &str, entity_ids: &[i64]) -> rusqlite::Result<(Vec<i64>, Vec<i64>)> {
    if entity_ids.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let shared = !entities::only_scope(conn, scope)?;
    // Past this size the threshold no longer grows with it.
    let saturated = (ENTITY_LIMIT as f64 / COMMON_SHARE).ceil() as i64;
    let n = if shared { entities::scope_rows_up_to(conn, scope, saturated)? } else { entities::unredacted_rows(conn)? };
    // More links than the retriever returns also makes an entity common: it could only ever admit an
    // arbitrary (newest) slice of its memories, and scanning them all would cost as much as the
    // full-text search itself.
    let threshold = COMMON_MIN_LINKS.max(((COMMON_SHARE * n as f64) as i64).min(ENTITY_LIMIT as i64));
    let (mut selective, mut common) = (Vec::new(), Vec::new());
    for &e in entity_ids {
        let links = if shared {
            entities::scoped_links_up_to(conn, e, scope, threshold + 1)?
        } else {
            entities::links_up_to(conn, e, threshold + 1)?
        };
        if links > threshold {
            common.push(e);
        } else {
            selective.push(e);
        }
    }
    Ok((selective, common))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::testdb::{add, ids, open, query};

    #[test]
    fn a_task_is_read_as_naming_a_bounded_number_of_entities() {
        let conn = open();
        // 200 spellings of one name (one gazetteer key), and 200 other names.
        let variants: Vec<String> = (0..200).map(|i| format!("Atlas{}", "!".repeat(i + 1))).collect();
        add(&conn, "mem_1", "variants", "2026-05-01T00:00:00Z", "semantic", &serde_json::to_string(&variants).unwrap());
        let guests: Vec<String> = (0..200).map(|i| format!("Guest{i:03}")).collect();
        add(&conn, "mem_2", "guests", "2026-05-01T00:00:00Z", "semantic", &serde_json::to_string(&guests).unwrap());
        let gz = gazetteer(&conn).expect("gazetteer");
        let (ids, names) = gz.find("When is the Atlas launch?");
        assert_eq!((ids.len(), names.len()), (MAX_TASK_ENTITIES, 1));
        let (ids, names) = gz.find(&guests.join(" and "));
        assert_eq!((ids.len(), names.len()), (MAX_TASK_ENTITIES, MAX_TASK_ENTITIES));
        assert_eq!(names[..3], ["Guest000", "Guest001", "Guest002"], "in order of first mention");
        let unique: HashSet<i64> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len());
    }

    #[test]
    fn ranks_memories_linked_to_named_entities() {
        let conn = open();
        add(&conn, "mem_1", "kickoff meeting", "2026-05-01T00:00:00Z", "semantic", r#"["Dana Scully"]"#);
        add(&conn, "mem_2", "Dana and Fox met", "2026-05-02T00:00:00Z", "semantic", r#"["Dana Scully", "Fox"]"#);
        add(&conn, "mem_3", "unrelated", "2026-05-03T00:00:00Z", "semantic", r#"["Walter"]"#);
        let q = query("what did dana scully and fox decide?");
        let mut pool = Pool::default();
        let e = rank(&conn, &q, &[], &super::super::vector::hash_embed(q.task), &mut pool).expect("rank");
        assert_eq!(e.names, ["Dana Scully", "Fox"]);
        assert_eq!(ids(&pool, &e.ranking), ["mem_2", "mem_1"], "more task entities first");
        let e = rank(&conn, &query("nobody"), &[], &[], &mut Pool::default()).expect("rank");
        assert!(e.ranking.is_empty() && e.names.is_empty());
    }

    #[test]
    fn a_common_entity_settles_near_ties_and_never_lifts_a_weak_match_over_a_strong_one() {
        let fts = [10, 11, 12, 13];
        let strength = [8.0, 4.0, 3.9, 1.0];
        // 12 names the entity: it passes 11 (a near tie), not 10 (twice as strong).
        assert_eq!(boost_named(&fts, &strength, &[12, 13]), [10, 12, 11, 13]);
        assert_eq!(boost_named(&fts, &strength, &[]), fts, "nothing named: unchanged");
        assert_eq!(boost_named(&fts, &[], &[12]), fts, "no strengths (pair index ranked too): unchanged");
        let tied = [5.0, 5.0, 5.0, 5.0];
        assert_eq!(boost_named(&fts, &tied, &[12]), [12, 10, 11, 13], "equal strengths keep their order");
    }

    #[test]
    fn a_common_entity_counts_more_when_the_strongest_match_names_it() {
        let fts = [10, 11, 12, 13];
        let strength = [8.0, 4.0, 3.0, 1.0];
        // The best match names the entity: its other match (3.0 × 1.5) passes 11 (4.0), the best
        // keeps its place.
        assert_eq!(boost_named(&fts, &strength, &[10, 12]), [10, 12, 11, 13]);
        // The same match, with a best match that does not name it: × 1.25 does not pass 4.0.
        assert_eq!(boost_named(&fts, &strength, &[12]), fts);
    }

    #[test]
    fn a_common_entity_votes_only_for_matches_close_to_the_best() {
        let fts = [10, 11, 12, 13];
        let strength = [10.0, 7.0, 5.0, 6.5];
        assert_eq!(named_votes(&fts, &strength, &[13, 12, 10]), [10, 13], "in full-text order, ≥ 0.6 of the best");
        assert!(named_votes(&fts, &[], &[10]).is_empty());
    }

    #[test]
    fn finds_multiword_longest_names() {
        let g = Gazetteer::build(vec![
            (1, "Atlas".into()),
            (2, "Atlas Launch".into()),
            (3, "Dana Scully".into()),
            (4, "Zoë".into()),
        ]);
        assert_eq!(g.len(), 4);
        let (ids, names) = g.find("When is the atlas launch? Ask dana scully and zoe.");
        assert_eq!(ids, vec![2, 3, 4]);
        assert_eq!(names, vec!["Atlas Launch", "Dana Scully", "Zoë"]);
        assert_eq!(g.find("atlases dana").0, Vec::<i64>::new());
        assert!(Gazetteer::build(Vec::new()).find("anything").0.is_empty());
    }

    #[test]
    fn names_that_share_a_key_are_one_name_shown_as_first_read() {
        let g = Gazetteer::build(vec![(7, "dana-scully".into()), (3, "Dana Scully".into()), (9, " ".into())]);
        assert_eq!(g.len(), 1);
        assert_eq!(g.find("ask Dana Scully"), (vec![7, 3], vec!["dana-scully".to_string()]));
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The gazetteer finds what a map from each key to its ids and first name finds.
        #[test]
        fn finds_what_a_map_of_keys_finds(
            names in prop::collection::vec(prop::sample::select(vec!["Dana", "dana", "Dana Scully", "DANA-scully", "Fox", "Zoë", "zoe", "Atlas Launch", "atlas", ""]), 0..12),
            task in prop::collection::vec(prop::sample::select(vec!["dana", "scully", "fox", "zoe", "atlas", "launch", "and"]), 0..8),
        ) {
            let entities: Vec<(i64, String)> = names.iter().enumerate().map(|(i, n)| (i as i64 * 3 + 1, n.to_string())).collect();
            let mut want: std::collections::BTreeMap<String, (Vec<i64>, String)> = Default::default();
            for (id, n) in &entities {
                let key = text::words(n).join(" ");
                if !key.is_empty() {
                    want.entry(key).or_insert_with(|| (Vec::new(), n.clone())).0.push(*id);
                }
            }
            let g = Gazetteer::build(entities.clone());
            prop_assert_eq!(g.len(), want.len());
            for (key, (ids, name)) in &want {
                prop_assert_eq!(g.find(key), (ids.clone(), vec![name.clone()]));
            }
            let task = task.join(" ");
            let (found, shown) = g.find(&task);
            for n in &shown {
                prop_assert!(want.values().any(|(_, first)| first == n), "{} is no first name", n);
            }
            prop_assert!(found.iter().all(|id| entities.iter().any(|(i, _)| i == id)));
        }
    }
}
