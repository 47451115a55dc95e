//! Reciprocal rank fusion (k = 60) of the relevance-bearing retrievers' rankings.

use std::collections::HashMap;

/// RRF constant.
pub const RRF_K: f64 = 60.0;

/// One fused entry: the index of the item in the caller's pool, its fused score normalised to
/// [0, 1] and its 1-based fused rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// Pool index.
    pub item: usize,
    /// Σ 1/(k + rank) over rankings, rescaled to [0, 1] over the fused list (best 1, weakest 0).
    pub relevance: f64,
    /// 1-based position in the fused order.
    pub rank: usize,
}

/// Fuses rankings (each a list of pool indexes, best first). `tiebreak` orders equal scores.
pub fn rrf<K: Ord>(rankings: &[&[usize]], tiebreak: impl Fn(usize) -> K) -> Vec<Fused> {
    let weights = vec![1.0; rankings.len()];
    rrf_weighted(rankings, &weights, tiebreak)
}

/// [`rrf`] with a weight per ranking: Σ weight/(k + rank).
pub fn rrf_weighted<K: Ord>(rankings: &[&[usize]], weights: &[f64], tiebreak: impl Fn(usize) -> K) -> Vec<Fused> {
    let active: f64 = rankings.iter().zip(weights).filter(|(r, _)| !r.is_empty()).map(|(_, w)| *w).sum();
    if active == 0.0 {
        return Vec::new();
    }
    let mut score: HashMap<usize, f64> = HashMap::new();
    for (ranking, w) in rankings.iter().zip(weights) {
        for (pos, &item) in ranking.iter().enumerate() {
            *score.entry(item).or_default() += w / (RRF_K + pos as f64 + 1.0);
        }
    }
    let best = active / (RRF_K + 1.0);
    let mut v: Vec<(usize, f64)> = score.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| tiebreak(a.0).cmp(&tiebreak(b.0))));
    // Relevance is the fused score rescaled over this candidate list (best 1, weakest 0): RRF scores
    // are flat (rank 1 and rank 100 differ by less than 3x), and the packer weighs relevance against
    // tokens, so an unscaled score would let short, barely matching memories crowd out strong ones.
    let top = v.first().map_or(best, |x| x.1);
    let low = v.last().map_or(0.0, |x| x.1);
    v.into_iter()
        .enumerate()
        .map(|(i, (item, s))| {
            let r = if top > low { (s - low) / (top - low) } else { 1.0 };
            Fused { item, relevance: round6(r.clamp(0.0, 1.0)), rank: i + 1 }
        })
        .collect()
}

/// Rounds to 6 decimal places (stable JSON output).
pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_wins() {
        let a = [0usize, 1, 2];
        let b = [1usize, 0];
        let f = rrf(&[&a, &b], |i| i);
        assert_eq!(f[0].item, 0); // tie on score, lower index first
        assert_eq!(f[0].relevance, f[1].relevance);
        assert_eq!(f[2].item, 2);
        assert!(f[2].relevance < 0.5);
        let solo = rrf(&[&a], |i| i);
        assert_eq!(solo[0].relevance, 1.0);
    }
}
