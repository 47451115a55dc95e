//! A deterministic synthetic personal-memory corpus for the benchmarks: the same seed and size give
//! the same rows, byte for byte, on every machine (SplitMix64, no external RNG).
//!
//! What it models, and why (each feature exercises a path of cmp):
//! - a Zipfian vocabulary of a few thousand words, realistic topic words at the head, so FTS5
//!   posting lists have the skew of real text (a few huge lists, a long tail);
//! - ~200 named people and projects as `entities` (JSON arrays), mostly also named in the text,
//!   for the entity retriever and its gazetteer;
//! - all seven kinds in plausible proportions (the packer's layers);
//! - `occurred_at`/`captured_at` over two years (recency decay, `as_of`);
//! - ~3% restatements (near-duplicate rephrasings of an earlier row) for claim folding;
//! - supersession chains (`superseded_by`/`superseded_at`) for eligibility and time travel;
//! - ~0.5% redacted rows and two scopes (90/10) for the confinement rules;
//! - optional 384-dimensional user embeddings (unit vectors) on a share of rows.

use rusqlite::Connection;
use serde_json::json;

/// Bumped whenever the generator's output changes, so a cached database is regenerated.
pub const GENERATOR_VERSION: u32 = 1;
/// Dimensions of the synthetic user embeddings (a common sentence-embedding size).
pub const EMBED_DIMS: usize = 384;
/// First day of the corpus (2023-01-01) as Unix seconds; rows span [`SPAN_DAYS`] from there.
pub const START: i64 = 1_672_531_200;
/// Length of the corpus timeline in days.
pub const SPAN_DAYS: i64 = 730;
/// Share of rows in the second scope.
pub const WORK_SCOPE_SHARE: f64 = 0.10;
/// Share of restatements (near-duplicate rephrasings of an earlier row).
pub const RESTATEMENT_SHARE: f64 = 0.03;
/// Share of rows that supersede an earlier row.
pub const SUPERSEDE_SHARE: f64 = 0.02;
/// Zipf–Mandelbrot exponent and rank offset of the vocabulary.
pub const ZIPF_EXPONENT: f64 = 1.07;
pub const ZIPF_OFFSET: f64 = 30.0;
/// Share of redacted rows.
pub const REDACTED_SHARE: f64 = 0.005;

// ------------------------------------------------------------------------------------------- rng

/// SplitMix64: tiny, fast, and good enough for benchmark data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n); 0 when n is 0.
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (((self.next_u64() >> 32) * n as u64) >> 32) as usize
        }
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// A uniformly chosen element.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    /// Approximately standard normal (sum of 4 uniforms, rescaled): enough for random directions.
    fn normalish(&mut self) -> f32 {
        let s: f64 = (0..4).map(|_| self.unit()).sum::<f64>() - 2.0;
        (s * (3.0f64).sqrt()) as f32
    }
}

/// A deterministic pseudo-random unit vector of [`EMBED_DIMS`] dimensions for `key`.
pub fn unit_vector(seed: u64, key: u64) -> Vec<f32> {
    let mut r = Rng::new(seed ^ key.wrapping_mul(0xd1b5_4a32_d192_ed03));
    let mut v: Vec<f32> = (0..EMBED_DIMS).map(|_| r.normalish()).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
    v.iter_mut().for_each(|x| *x /= n);
    v
}

/// float32 little-endian bytes (sqlite-vec's layout, what cmp reads).
pub fn f32_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

// ------------------------------------------------------------------------------------ vocabulary

/// Realistic topic words: the head of the Zipf distribution.
const TOPIC_WORDS: &str = "meeting budget deploy invoice dentist flight hotel launch release roadmap review \
design draft contract renewal pricing customer support ticket incident outage migration database backup \
server cluster staging production latency dashboard metrics report quarterly planning hiring interview \
offer salary vacation holiday birthday dinner lunch coffee gym running yoga doctor appointment insurance \
mortgage rent lease apartment garden kitchen groceries recipe pasta salad train ticket passport visa \
conference talk slides workshop training onboarding documentation wiki api endpoint schema index query \
cache queue worker cron script pipeline build test coverage bug regression hotfix patch version branch \
merge review approval sprint standup retro demo feedback survey analytics funnel signup churn revenue \
forecast spreadsheet presentation proposal partner vendor procurement legal compliance audit security \
password token certificate firewall vpn laptop monitor keyboard phone charger headphones camera printer \
router wifi email calendar reminder deadline milestone goal priority blocker risk dependency estimate \
scope requirement feature request prototype mockup wireframe usability accessibility localization \
translation pricing discount coupon subscription billing refund payment transfer bank account tax \
receipt expense reimbursement travel itinerary airport taxi rental car parking fuel repair mechanic \
school homework teacher parent kids daughter son family wedding anniversary gift party concert museum \
hiking camping beach weekend morning evening night tomorrow yesterday monday tuesday wednesday thursday \
friday saturday sunday january february march april may june july august september october november \
december painting guitar piano book novel podcast movie series episode article newsletter blog post \
photo video recording transcript notes summary agenda minutes followup action owner stakeholder client \
team manager director engineer designer analyst researcher intern contractor consultant volunteer \
charity donation fundraiser community neighbor landlord plumber electrician cleaner babysitter tutor \
coach therapist nutrition diet allergy medication prescription pharmacy vaccine checkup surgery recovery \
sleep stress burnout focus habit routine journal meditation walk bike swim marathon race tournament \
team score game match league season ticket stadium festival market bakery restaurant reservation menu \
wine beer tea breakfast brunch snack dessert chocolate cake bread cheese vegetables fruit apples coffee";

const ADJECTIVES: &[&str] = &[
    "quick",
    "slow",
    "late",
    "early",
    "urgent",
    "minor",
    "major",
    "new",
    "old",
    "final",
    "shared",
    "private",
    "weekly",
    "monthly",
    "annual",
    "remote",
    "local",
    "critical",
    "optional",
    "tentative",
    "formal",
    "casual",
];
const VERBS: &[&str] = &[
    "ship", "review", "move", "cancel", "book", "fix", "update", "migrate", "renew", "schedule", "send", "approve",
    "finish", "start", "pause", "test", "deploy", "refactor", "document", "pay", "call", "email",
];
const PLACES: &[&str] = &[
    "the office",
    "the cafe",
    "home",
    "the airport",
    "the park",
    "Berlin",
    "Lisbon",
    "the client site",
    "the library",
    "the gym",
    "the clinic",
    "the station",
    "Paris",
    "Toronto",
    "the studio",
    "the lab",
];
const FIRST: &[&str] = &[
    "Dana", "Leo", "Maya", "Sam", "Priya", "Tom", "Ines", "Omar", "Chen", "Lucia", "Noah", "Aisha", "Jonas", "Yuki",
    "Carlos", "Freya", "Ravi", "Elena", "Kofi", "Mei", "Hugo", "Nadia", "Ben", "Zoë", "Ahmed", "Clara", "Felix",
    "Amara", "Ivan", "Sofia", "Mateo", "Hana", "Oscar", "Leila", "Pablo", "Anya", "Theo", "Ruth", "Kenji", "Marta",
];
const LAST: &[&str] = &[
    "Ortiz",
    "Reyes",
    "Kim",
    "Novak",
    "Patel",
    "Schmidt",
    "Haddad",
    "Nguyen",
    "Rossi",
    "Okafor",
    "Silva",
    "Larsen",
    "Dubois",
    "Tanaka",
    "Müller",
    "Cohen",
    "Singh",
    "Moreau",
    "Berg",
    "Costa",
    "Ivanova",
    "Walsh",
    "Mensah",
    "Fischer",
    "Sato",
    "García",
    "Brown",
    "Yilmaz",
    "Horvat",
    "Lindqvist",
];
const PROJECTS: &[&str] = &[
    "Atlas",
    "Orion",
    "Phoenix",
    "Nimbus",
    "Helios",
    "Juniper",
    "Sequoia",
    "Falcon",
    "Aurora",
    "Cobalt",
    "Zephyr",
    "Titan",
    "Vega",
    "Lyra",
    "Polaris",
    "Quartz",
    "Ember",
    "Harbor",
    "Summit",
    "Meridian",
    "Beacon",
    "Cascade",
    "Drift",
    "Echo",
    "Fjord",
    "Granite",
    "Horizon",
    "Indigo",
    "Jade",
    "Kestrel",
    "Lumen",
    "Mosaic",
    "Nova",
    "Onyx",
    "Pulse",
    "Quill",
    "Raven",
    "Sierra",
    "Tundra",
    "Umbra",
    "Vertex",
    "Willow",
    "Xenon",
    "Yarrow",
    "Zenith",
    "Acorn",
    "Birch",
    "Cinder",
    "Delta",
    "Ferry",
    "Garnet",
    "Hazel",
    "Iris",
    "Jasper",
    "Kelp",
    "Larch",
    "Maple",
    "Nectar",
    "Opal",
    "Pine",
    "Reef",
    "Sable",
    "Tide",
    "Vale",
    "Wren",
    "Atlas Mobile",
    "Orion API",
    "Billing v2",
    "Data Lake",
    "Home Reno",
];

/// Kinds and their shares of the corpus (episodic notes dominate personal memory).
pub const KINDS: &[(&str, f64)] = &[
    ("episodic", 0.35),
    ("semantic", 0.30),
    ("decision", 0.10),
    ("preference", 0.08),
    ("procedural", 0.07),
    ("negative", 0.05),
    ("style", 0.05),
];

/// The vocabulary, entity names and a Zipf sampler over the vocabulary.
#[derive(Debug, Clone)]
pub struct Lexicon {
    /// Words by Zipf rank (most frequent first).
    pub words: Vec<String>,
    /// People and projects.
    pub entities: Vec<String>,
    cdf: Vec<f64>,
}

impl Lexicon {
    /// The lexicon for `seed`: ~3,000 words, ~200 entities.
    pub fn new(seed: u64) -> Self {
        let mut r = Rng::new(seed ^ 0x5eed_1e81_c0de);
        let mut words: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for w in TOPIC_WORDS.split_whitespace() {
            if seen.insert(w.to_string()) {
                words.push(w.to_string());
            }
        }
        // The long tail: pronounceable made-up words (rare terms, like names of things in real notes).
        const ONSETS: &[&str] =
            &["b", "br", "c", "d", "f", "g", "gr", "k", "l", "m", "n", "p", "pl", "r", "s", "st", "t", "tr", "v", "z"];
        const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "ou"];
        const CODAS: &[&str] = &["", "n", "r", "s", "l", "x", "nd", "rt", "m", "k"];
        while words.len() < 3000 {
            let syl = 2 + r.below(2);
            let mut w = String::new();
            for _ in 0..syl {
                w.push_str(r.pick::<&str>(ONSETS));
                w.push_str(r.pick::<&str>(VOWELS));
            }
            w.push_str(r.pick::<&str>(CODAS));
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        // Zipf–Mandelbrot, exponent 1.07: natural-language-like, with the offset standing in for the
        // stopwords that would hold the top ranks of real text (cmp drops them from queries), so the
        // commonest topic word is in ~8% of notes, not in most of them.
        let mut acc = 0.0;
        let cdf = (1..=words.len())
            .map(|rank| {
                acc += 1.0 / (rank as f64 + ZIPF_OFFSET).powf(ZIPF_EXPONENT);
                acc
            })
            .collect();
        let mut entities: Vec<String> = Vec::new();
        'outer: for f in FIRST {
            for _ in 0..4 {
                let name = format!("{f} {}", r.pick(LAST));
                if !entities.contains(&name) {
                    entities.push(name);
                }
                if entities.len() >= 130 {
                    break 'outer;
                }
            }
        }
        entities.extend(PROJECTS.iter().map(|p| p.to_string()));
        Lexicon { words, entities, cdf }
    }

    /// A word drawn from the Zipf distribution.
    pub fn word(&self, r: &mut Rng) -> &str {
        let total = self.cdf.last().copied().unwrap_or(1.0);
        let x = r.unit() * total;
        let i = self.cdf.partition_point(|&c| c < x).min(self.words.len() - 1);
        &self.words[i]
    }

    fn words_n(&self, r: &mut Rng, n: usize) -> String {
        (0..n).map(|_| self.word(r)).collect::<Vec<_>>().join(" ")
    }

    /// An entity drawn with a skew (a few people and projects come up far more often).
    pub fn entity(&self, r: &mut Rng) -> &str {
        let u = r.unit();
        &self.entities[((u * u) * self.entities.len() as f64) as usize % self.entities.len()]
    }
}

// ------------------------------------------------------------------------------------------ rows

/// One generated memory row (the columns of `cmp_memories` an application writes).
#[derive(Debug, Clone)]
pub struct Row {
    pub id: String,
    pub content: String,
    pub summary: Option<String>,
    pub kind: &'static str,
    pub occurred_at: Option<String>,
    pub captured_at: String,
    pub source_url: Option<String>,
    pub confidence: Option<f64>,
    pub trust: f64,
    pub entities: String,
    pub superseded_by: Option<String>,
    pub superseded_at: Option<String>,
    pub conflict: bool,
    pub redacted: bool,
    pub scope: &'static str,
    pub embedding: Option<Vec<u8>>,
}

/// Days since 1970-01-01 → (year, month, day).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Unix seconds → `YYYY-MM-DDTHH:MM:SSZ`.
pub fn iso(t: i64) -> String {
    let (y, m, d) = civil_from_days(t.div_euclid(86_400));
    let r = t.rem_euclid(86_400);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", r / 3600, r % 3600 / 60, r % 60)
}

/// The clock the benchmark reads at: one day after the corpus ends.
pub fn bench_now() -> String {
    iso(START + (SPAN_DAYS + 1) * 86_400)
}

fn pick_kind(r: &mut Rng) -> &'static str {
    let mut x = r.unit();
    for (k, share) in KINDS {
        if x < *share {
            return k;
        }
        x -= share;
    }
    "semantic"
}

fn sentence(lx: &Lexicon, r: &mut Rng, kind: &str, ents: &[String]) -> String {
    let e = |i: usize| ents.get(i).cloned().unwrap_or_else(|| "the team".into());
    let w = |r: &mut Rng, n: usize| lx.words_n(r, n);
    let head = match kind {
        "episodic" => match r.below(4) {
            0 => format!("Met {} at {} to talk about the {} {}", e(0), r.pick(PLACES), w(r, 1), w(r, 1)),
            1 => {
                format!("Called {} about the {} {}; {} mentioned {}", e(0), r.pick(ADJECTIVES), w(r, 2), e(1), w(r, 3))
            }
            2 => format!("Spent the afternoon on {} {} with {}", w(r, 2), w(r, 1), e(0)),
            _ => format!("{} sent the {} {} for {}", e(0), r.pick(ADJECTIVES), w(r, 2), w(r, 1)),
        },
        "semantic" => match r.below(4) {
            0 => format!("{} runs on {} and the {} {} lives in {}", e(0), w(r, 1), w(r, 1), w(r, 1), r.pick(PLACES)),
            1 => format!("{}'s {} is {} {}", e(0), w(r, 1), w(r, 2), w(r, 1)),
            2 => format!("The {} for {} is owned by {}", w(r, 2), e(0), e(1)),
            _ => format!("{} {} costs {} per {}", e(0), w(r, 1), 10 + r.below(990), w(r, 1)),
        },
        "decision" => match r.below(3) {
            0 => format!("Decision: {} will {} the {} {} before {}", e(0), r.pick(VERBS), w(r, 2), w(r, 1), w(r, 1)),
            1 => format!("We decided that the {} {} moves to {}", w(r, 1), w(r, 1), e(0)),
            _ => format!("Agreed with {} to {} {} {} next sprint", e(0), r.pick(VERBS), w(r, 2), w(r, 1)),
        },
        "preference" => match r.below(2) {
            0 => format!("{} prefers {} over {} for {}", e(0), w(r, 1), w(r, 1), w(r, 2)),
            _ => format!("I like {} {} in the {}", w(r, 1), w(r, 1), w(r, 1)),
        },
        "procedural" => format!(
            "To {} the {}: run {} {}, then {} {}, then check {} with {}",
            r.pick(VERBS),
            w(r, 1),
            w(r, 1),
            w(r, 1),
            r.pick(VERBS),
            w(r, 2),
            w(r, 1),
            e(0)
        ),
        "negative" => match r.below(2) {
            0 => format!("Never {} {} {} on a {}", r.pick(VERBS), w(r, 1), w(r, 1), w(r, 1)),
            _ => format!("Do not share the {} {} with {}", w(r, 2), w(r, 1), e(0)),
        },
        _ => format!("Write to {} in a {} tone: short {} and no {}", e(0), r.pick(ADJECTIVES), w(r, 1), w(r, 1)),
    };
    // Tails give a realistic length spread (most notes short, some long).
    let extra = match r.below(10) {
        0..=4 => 0,
        5..=7 => 1,
        8 => 2,
        _ => 4,
    };
    let mut s = head;
    for _ in 0..extra {
        s.push_str(". ");
        let n = 4 + r.below(12);
        let t = w(r, n);
        let mut cs = t.chars();
        if let Some(c) = cs.next() {
            s.extend(c.to_uppercase());
            s.push_str(cs.as_str());
        }
    }
    s.push('.');
    s
}

/// A rephrasing close enough to fold (word-set Jaccard ≥ 0.8 for notes of 10+ words): a leading
/// label, and at most one word swapped.
fn restate(lx: &Lexicon, r: &mut Rng, original: &str) -> String {
    let label = *r.pick(&["Note: ", "Reminder: ", "FYI ", ""]);
    let mut words: Vec<String> = original.split(' ').map(String::from).collect();
    if words.len() >= 12 {
        let i = 1 + r.below(words.len() - 2);
        let punct: String = words[i].chars().filter(|c| !c.is_alphanumeric()).collect();
        words[i] = format!("{}{punct}", lx.word(r));
    }
    format!("{label}{}", words.join(" "))
}

fn row_id(r: &mut Rng) -> String {
    format!("mem_{:012x}", r.next_u64() >> 16)
}

/// Generates `n` rows for `seed`; `embed_every` > 0 gives every `embed_every`-th row a user
/// embedding. Output depends only on the arguments.
pub fn generate(seed: u64, n: usize, embed_every: usize) -> Vec<Row> {
    let lx = Lexicon::new(seed);
    let mut r = Rng::new(seed);
    let mut rows: Vec<Row> = Vec::with_capacity(n);
    let mut ids = std::collections::HashSet::new();
    // Indexes of rows that may be superseded next (the live head of each chain).
    let mut heads: Vec<usize> = Vec::new();
    for i in 0..n {
        let mut id = row_id(&mut r);
        while !ids.insert(id.clone()) {
            id = row_id(&mut r);
        }
        // Time grows with the index (rows are appended as life happens), with jitter.
        let base = START + (i as i64 * SPAN_DAYS * 86_400) / n.max(1) as i64;
        let occurred = base + r.below(6 * 3600) as i64;
        let captured = occurred + [0, 60, 3600, 86_400, 3 * 86_400][r.below(5)] as i64;
        let scope = if r.chance(WORK_SCOPE_SHARE) { "work" } else { "default" };
        let restated = i > 10 && r.chance(RESTATEMENT_SHARE);
        let supersedes = !restated && i > 10 && r.chance(SUPERSEDE_SHARE);
        let (kind, content, ents) = if restated {
            let j = i - 1 - r.below(i.min(5000));
            (rows[j].kind, restate(&lx, &mut r, &rows[j].content), rows[j].entities.clone())
        } else {
            let kind = if supersedes { *r.pick(&["semantic", "decision", "preference"]) } else { pick_kind(&mut r) };
            let n_ent = [0, 1, 1, 1, 2, 2, 3][r.below(7)];
            let mut names: Vec<String> = Vec::new();
            for _ in 0..n_ent.max(usize::from(kind == "semantic")) {
                let e = lx.entity(&mut r).to_string();
                if !names.contains(&e) {
                    names.push(e);
                }
            }
            let mut content = sentence(&lx, &mut r, kind, &names);
            if supersedes {
                content = format!("Update: {content}");
            }
            // Some entities are tagged but not named in the text (the gazetteer must still link them).
            let tagged: Vec<&String> = names.iter().filter(|_| !r.chance(0.15)).collect();
            (kind, content, json!(tagged).to_string())
        };
        let summary = (content.split(' ').count() > 25).then(|| {
            let head: Vec<&str> = content.split(' ').take(10).collect();
            format!("{}…", head.join(" "))
        });
        let row = Row {
            id,
            summary: summary.filter(|_| r.chance(0.3)),
            kind,
            occurred_at: (!r.chance(0.05)).then(|| iso(occurred)),
            captured_at: iso(captured),
            source_url: r.chance(0.4).then(|| format!("https://notes.example/{}", r.next_u64() % 1_000_000)),
            confidence: r.chance(0.3).then(|| 0.5 + (r.below(51) as f64) / 100.0),
            trust: 0.3 + (r.below(61) as f64) / 100.0,
            entities: ents,
            superseded_by: None,
            superseded_at: None,
            conflict: r.chance(0.002),
            redacted: r.chance(REDACTED_SHARE),
            scope,
            embedding: (embed_every > 0 && i % embed_every == 0).then(|| f32_blob(&unit_vector(seed, i as u64))),
            content,
        };
        if supersedes {
            // Half the time extend an existing chain, else start one on a random earlier row.
            let cands: Vec<usize> = heads.iter().copied().filter(|&h| rows[h].scope == scope).collect();
            let target = if !cands.is_empty() && r.chance(0.5) {
                Some(*r.pick(&cands))
            } else {
                let j = r.below(i);
                (rows[j].superseded_by.is_none() && rows[j].scope == scope && !rows[j].redacted).then_some(j)
            };
            if let Some(j) = target {
                rows[j].superseded_by = Some(row.id.clone());
                rows[j].superseded_at = Some(row.captured_at.clone());
                heads.retain(|&h| h != j);
                heads.push(i);
                if heads.len() > 512 {
                    heads.remove(0);
                }
            }
        }
        rows.push(row);
    }
    rows
}

/// The sixteen column values of a row, in `cmp_memories` column order.
fn row_params(x: &Row) -> Vec<&dyn rusqlite::ToSql> {
    vec![
        &x.id,
        &x.content,
        &x.summary,
        &x.kind,
        &x.occurred_at,
        &x.captured_at,
        &x.source_url,
        &x.confidence,
        &x.trust,
        &x.entities,
        &x.superseded_by,
        &x.superseded_at,
        if x.conflict { &1i64 } else { &0i64 },
        if x.redacted { &1i64 } else { &0i64 },
        &x.scope,
        &x.embedding,
    ]
}

/// Inserts `rows` into `cmp_memories` (schema from `cmp_init`) in one transaction with one
/// prepared statement, so cmp's triggers maintain every index.
pub fn insert(conn: &Connection, rows: &[Row]) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    {
        let mut st = tx.prepare(
            "INSERT INTO cmp_memories(id, content, summary, kind, occurred_at, captured_at, source_url,
               confidence, trust, entities, superseded_by, superseded_at, conflict, redacted, scope, embedding)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        )?;
        for x in rows {
            st.execute(row_params(x).as_slice())?;
        }
    }
    tx.commit()
}

/// Inserts the columns an application typically writes (content, kind, entities, captured_at; ids
/// generated) of `rows` into `cmp_memories` in one transaction with one prepared statement.
pub fn insert_app_columns(conn: &Connection, rows: &[Row]) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    {
        let mut st =
            tx.prepare("INSERT INTO cmp_memories(content, kind, entities, captured_at) VALUES (?1, ?2, ?3, ?4)")?;
        for x in rows {
            st.execute(rusqlite::params![x.content, x.kind, x.entities, x.captured_at])?;
        }
    }
    tx.commit()
}

/// Inserts `rows` the bulk way: into a plain staging table first, then into `cmp_memories` with one
/// `INSERT … SELECT` statement. The triggers still index every row; FTS5 flushes its pending terms
/// once per statement instead of once per row.
pub fn insert_staged(conn: &Connection, rows: &[Row]) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch(
        "CREATE TEMP TABLE stage(id, content, summary, kind, occurred_at, captured_at, source_url, confidence,
           trust, entities, superseded_by, superseded_at, conflict, redacted, scope, embedding)",
    )?;
    {
        let mut st = tx.prepare(
            "INSERT INTO stage VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        )?;
        for x in rows {
            st.execute(row_params(x).as_slice())?;
        }
    }
    tx.execute_batch(
        "INSERT INTO cmp_memories(id, content, summary, kind, occurred_at, captured_at, source_url, confidence, trust,
           entities, superseded_by, superseded_at, conflict, redacted, scope, embedding)
         SELECT * FROM stage ORDER BY rowid;
         DROP TABLE stage;",
    )?;
    tx.commit()
}

// ----------------------------------------------------------------------------------------- tasks

/// A fixed set of `n` benchmark tasks from the same vocabulary and entity names: a mix of answer,
/// act, draft and plan intents, some naming entities, some empty-ish, some holding FTS5 syntax.
pub fn tasks(seed: u64, n: usize) -> Vec<String> {
    let lx = Lexicon::new(seed);
    let mut r = Rng::new(seed ^ 0x7a5c_5eed);
    const ODD: &[&str] = &[
        "",
        "   ",
        "?",
        "the",
        "what is it",
        "\"atlas\" AND (launch OR NEAR(deploy budget)) content:foo*",
        "^start -minus +plus col:val OR NOT",
        "Zoë's café — naïve résumé ☕",
        "🙂🙂🙂",
        "a-b c+d e*f (g) [h] {i} 'j' \"k\"",
    ];
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if i % 20 == 7 {
            out.push(ODD[(i / 20) % ODD.len()].to_string());
            continue;
        }
        let e = lx.entity(&mut r).to_string();
        let (w1, w2, w3) = (lx.word(&mut r).to_string(), lx.word(&mut r).to_string(), lx.word(&mut r).to_string());
        let named = r.chance(0.6);
        let who = if named { e.clone() } else { format!("the {w3}") };
        let t = match r.below(8) {
            0 => format!("What did we decide about the {w1} {w2} for {who}?"),
            1 => format!("When is the {w1} {w2} due"),
            2 => format!("fix the {w1} {w2} for {who}"),
            3 => format!("schedule a {w1} with {who} about {w2}"),
            4 => format!("draft a reply to {who} about the {w1} {w2}"),
            5 => format!("plan next steps for {who}: {w1}, {w2}, {w3}"),
            6 => format!("{w1} {w2}"),
            _ => format!("what does {who} prefer for {w1}?"),
        };
        out.push(t);
    }
    out
}
