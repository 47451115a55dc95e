//! Byte-pair encoding of one pre-tokenized piece with OpenAI's tables (`o200k_base`,
//! `cl100k_base`), laid out at build time by `build.rs` from tiktoken-rs: loading a table indexes a
//! few megabytes of bytes already in the binary, instead of decoding and indexing tiktoken's text
//! table (0.08–0.19 s on a process's first pack). The merges are tiktoken's own: repeatedly join the
//! adjacent pair whose bytes have the lowest rank, the leftmost on a tie; a long piece uses a heap.
//! Tests compare every count with tiktoken-rs's encoder (`pieces.rs`, `tests/budget.rs`,
//! `examples/tokencal.rs --verify`).

use rustc_hash::FxHashMap;
use std::collections::BinaryHeap;
use std::sync::OnceLock;

static O200K_BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k.bpe"));
static CL100K_BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cl100k.bpe"));

/// Pieces at least this long are merged with a heap (tiktoken's threshold).
const LARGE_PIECE: usize = 100;

/// One byte-pair table: each rank's bytes, and the rank of each token's bytes.
pub struct Table {
    blob: &'static [u8],
    n: usize,
    ranks: FxHashMap<&'static [u8], u32>,
}

/// The `o200k_base` table, loaded on first use.
pub fn o200k() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| Table::load(O200K_BYTES))
}

/// The `cl100k_base` table, loaded on first use.
pub fn cl100k() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| Table::load(CL100K_BYTES))
}

impl Table {
    fn load(blob: &'static [u8]) -> Table {
        let n = read_u32(blob, 0) as usize;
        let mut t = Table { blob, n, ranks: FxHashMap::default() };
        t.ranks.reserve(n);
        for r in 0..n {
            let bytes = t.token(r as u32);
            if !bytes.is_empty() {
                t.ranks.insert(bytes, r as u32);
            }
        }
        t
    }

    /// The bytes of rank `r` (empty for a rank that is no ordinary token).
    fn token(&self, r: u32) -> &'static [u8] {
        let r = r as usize;
        if r >= self.n {
            return &[];
        }
        let base = 4 * (self.n + 2);
        let (from, to) = (read_u32(self.blob, 4 * (r + 1)) as usize, read_u32(self.blob, 4 * (r + 2)) as usize);
        &self.blob[base + from..base + to]
    }

    fn rank(&self, bytes: &[u8]) -> Option<u32> {
        self.ranks.get(bytes).copied()
    }

    /// The tokens of one piece (a match of the table's pre-tokenizer pattern). Every single byte
    /// has a rank in both tables and a merge only joins a pair that has one, so every part found has
    /// a rank (tiktoken indexes them and would panic otherwise).
    pub fn encode(&self, piece: &str) -> Vec<u32> {
        let piece = piece.as_bytes();
        if piece.is_empty() {
            return Vec::new();
        }
        if let Some(r) = self.rank(piece) {
            return vec![r];
        }
        if piece.len() < LARGE_PIECE {
            let parts = self.merge(piece);
            return parts.windows(2).filter_map(|w| self.rank(&piece[w[0].0..w[1].0])).collect();
        }
        self.merge_large(piece)
    }

    /// The bytes of `tokens`, in order.
    pub fn decode(&self, tokens: &[u32]) -> Vec<u8> {
        tokens.iter().flat_map(|&t| self.token(t).iter().copied()).collect()
    }

    /// tiktoken's `_byte_pair_merge`: (start, rank of the pair starting there), ending in two
    /// sentinels; consecutive starts bound the tokens.
    fn merge(&self, piece: &[u8]) -> Vec<(usize, u32)> {
        let mut parts: Vec<(usize, u32)> = Vec::with_capacity(piece.len() + 1);
        let mut min = (u32::MAX, usize::MAX);
        for i in 0..piece.len() - 1 {
            let r = self.rank(&piece[i..i + 2]).unwrap_or(u32::MAX);
            if r < min.0 {
                min = (r, i);
            }
            parts.push((i, r));
        }
        parts.push((piece.len() - 1, u32::MAX));
        parts.push((piece.len(), u32::MAX));
        let rank_at = |parts: &[(usize, u32)], i: usize| {
            if i + 3 < parts.len() {
                self.rank(&piece[parts[i].0..parts[i + 3].0]).unwrap_or(u32::MAX)
            } else {
                u32::MAX
            }
        };
        while min.0 != u32::MAX {
            let i = min.1;
            if i > 0 {
                parts[i - 1].1 = rank_at(&parts, i - 1);
            }
            parts[i].1 = rank_at(&parts, i);
            parts.remove(i + 1);
            min = (u32::MAX, usize::MAX);
            for (j, &(_, r)) in parts[..parts.len() - 1].iter().enumerate() {
                if r < min.0 {
                    min = (r, j);
                }
            }
        }
        parts
    }

    /// tiktoken's `_byte_pair_merge_large`: the same merges, the lowest pair found by a heap.
    fn merge_large(&self, piece: &[u8]) -> Vec<u32> {
        let mut state: Vec<Span> = Vec::with_capacity(piece.len());
        state.push(Span { prev: usize::MAX, end: 1, next_end: 2, next_rank: u32::MAX, cur_rank: u32::MAX });
        let mut heap = BinaryHeap::with_capacity(piece.len());
        for i in 0..piece.len() - 1 {
            if let Some(r) = self.rank(&piece[i..i + 2]) {
                heap.push(Merge { start: i, rank: r });
                state[i].next_rank = r;
            }
            state.push(Span { prev: i, end: i + 2, next_end: i + 3, next_rank: u32::MAX, cur_rank: u32::MAX });
        }
        let potential = |state: &mut Vec<Span>, heap: &mut BinaryHeap<Merge>, start: usize, next_end: usize| {
            state[start].next_end = next_end;
            state[start].next_rank = u32::MAX;
            if next_end <= piece.len() {
                if let Some(r) = self.rank(&piece[start..next_end]) {
                    heap.push(Merge { start, rank: r });
                    state[start].next_rank = r;
                }
            }
        };
        while let Some(left) = heap.pop() {
            if left.rank == u32::MAX {
                break;
            }
            if left.rank != state[left.start].next_rank {
                continue;
            }
            let left_start = left.start;
            let right_start = state[left_start].end;
            let right_end = state[left_start].next_end;
            let right_next_end = state[right_start].next_end;
            state[left_start].cur_rank = state[left_start].next_rank;
            state[left_start].end = right_end;
            potential(&mut state, &mut heap, left_start, right_next_end);
            if right_end < state.len() {
                state[right_end].prev = left_start;
            }
            if left_start > 0 {
                let prev_start = state[left_start].prev;
                potential(&mut state, &mut heap, prev_start, right_end);
            }
            state[right_start].next_rank = u32::MAX;
        }
        let mut out = Vec::new();
        let mut i = 0;
        while i < state.len() {
            if state[i].cur_rank != u32::MAX {
                out.push(state[i].cur_rank);
            } else if let Some(r) = self.rank(&piece[i..state[i].end]) {
                out.push(r);
            }
            i = state[i].end;
        }
        out
    }
}

/// A candidate merge of the heap: the lowest rank first, then the leftmost.
#[derive(Eq, PartialEq, Clone, Copy)]
struct Merge {
    start: usize,
    rank: u32,
}

impl Ord for Merge {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.rank.cmp(&self.rank).then_with(|| other.start.cmp(&self.start))
    }
}

impl PartialOrd for Merge {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The token starting at a byte of a long piece, while it is merged.
struct Span {
    prev: usize,
    end: usize,
    next_end: usize,
    next_rank: u32,
    cur_rank: u32,
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::super::pieces::{each_piece, Encoding};
    use super::*;

    fn texts() -> Vec<String> {
        let mut v: Vec<String> = [
            "hello",
            " world",
            "Internationalization",
            " antidisestablishmentarianism",
            "我的上司就只有高中学历",
            "😀😀😀",
            " ---===---",
            "1234567",
            "\n\n\n",
            "ſ",
            "Kelvin K",
            " naïve café",
            "ปัญหา",
            "안녕하세요",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.push("a".repeat(150));
        v.push(" ".repeat(300));
        v.push("xyzzy".repeat(40));
        v.push("漢字".repeat(80));
        v
    }

    #[test]
    fn pieces_encode_as_tiktoken_encodes_them_in_both_tables() {
        let tables = [
            (Encoding::O200k, o200k(), tiktoken_rs::o200k_base_singleton()),
            (Encoding::Cl100k, cl100k(), tiktoken_rs::cl100k_base_singleton()),
        ];
        for (enc, ours, theirs) in tables {
            for text in texts() {
                let mut got = Vec::new();
                each_piece(enc, &text, |p| {
                    got.extend(ours.encode(p));
                    true
                });
                let want = theirs.encode_ordinary(&text);
                assert_eq!(got, want, "{enc:?} {text:?}");
                assert_eq!(ours.decode(&want), text.as_bytes(), "{enc:?} {text:?}");
            }
        }
    }

    #[test]
    fn every_byte_has_a_rank_in_both_tables() {
        for t in [o200k(), cl100k()] {
            assert!((0..=255u8).all(|b| t.rank(&[b]).is_some()));
        }
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any text, piece by piece, encodes to tiktoken's tokens, in both tables; runs of one
        /// character make pieces of a hundred bytes and more (the heap merge).
        #[test]
        fn any_text_encodes_as_tiktoken_encodes_it(
            parts in proptest::collection::vec((proptest::sample::select(
                "aZé1 9 \t\n'sStTrRvVlLmMdD/.,!-_\u{a0}\u{301}\u{17f}\u{212a}中文字한국ไทยカ😀\u{2003}\"{}:xq".chars().collect::<Vec<char>>()
            ), 1usize..120), 0..12),
        ) {
            let text: String = parts.iter().map(|(c, n)| if *n > 8 { c.to_string().repeat(*n) } else { c.to_string() }).collect();
            for (enc, ours, theirs) in [
                (Encoding::O200k, o200k(), tiktoken_rs::o200k_base_singleton()),
                (Encoding::Cl100k, cl100k(), tiktoken_rs::cl100k_base_singleton()),
            ] {
                let mut got = Vec::new();
                each_piece(enc, &text, |p| {
                    got.extend(ours.encode(p));
                    true
                });
                prop_assert_eq!(got, theirs.encode_ordinary(&text), "{:?} {:?}", enc, text);
            }
        }
    }
}
