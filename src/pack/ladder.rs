//! The compression ladder (docs/protocol.md, "Packing"): full content → stored summary (if shorter) → head sentence
//! (if shorter) → dropped. A cited fact is densified into the pack rather than silently deleted.

use super::{Compression, Item};
use crate::text;

/// The rungs of an item, longest first: (content, compression tag). The first is always the full text.
pub fn rungs(item: &Item) -> Vec<(String, Option<Compression>)> {
    let full_len = item.content.chars().count();
    let mut v = vec![(item.content.clone(), None)];
    let mut shortest = full_len;
    if let Some(s) = item.summary.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        let n = s.chars().count();
        if n < shortest {
            v.push((s.to_string(), Some(Compression::Summary)));
            shortest = n;
        }
    }
    if let Some(h) = text::head_sentence(&item.content) {
        if h.chars().count() < shortest {
            v.push((h.to_string(), Some(Compression::Head)));
        }
    }
    v
}

/// The shortest rung of an item (the full text when nothing is shorter).
pub fn shortest(item: &Item) -> (String, Option<Compression>) {
    rungs(item).pop().unwrap_or_else(|| (item.content.clone(), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(content: &str, summary: Option<&str>) -> Item {
        Item { summary: summary.map(Into::into), ..crate::pack::testing::item("mem_1", content) }
    }

    #[test]
    fn rungs_only_get_shorter() {
        let r = rungs(&item("First sentence here. Second one follows, much longer than the first.", Some("Short sum")));
        let tags: Vec<_> = r.iter().map(|x| x.1).collect();
        assert_eq!(tags, vec![None, Some(Compression::Summary)]);
        let r = rungs(&item("First. Second sentence.", Some("A summary that is longer than everything")));
        assert_eq!(r.last().unwrap().1, Some(Compression::Head));
        assert_eq!(rungs(&item("One sentence only", None)).len(), 1);
    }

    #[test]
    fn a_blank_or_longer_summary_is_no_rung() {
        assert_eq!(rungs(&item("Short text", Some("   "))).len(), 1);
        assert_eq!(rungs(&item("Short text", Some("A much longer summary than the text"))).len(), 1);
        assert_eq!(shortest(&item("Short text", None)), ("Short text".to_string(), None));
    }

    proptest::proptest! {
        /// Rungs start at the full text, each strictly shorter than the one before; the shortest is
        /// the last.
        #[test]
        fn rungs_are_strictly_shorter(content in "[a-z .!?]{0,80}", summary in proptest::option::of("[a-z .]{0,40}")) {
            let it = item(&content, summary.as_deref());
            let r = rungs(&it);
            proptest::prop_assert_eq!(&r[0], &(content.clone(), None));
            for w in r.windows(2) {
                proptest::prop_assert!(w[1].0.chars().count() < w[0].0.chars().count(), "{:?}", r);
            }
            proptest::prop_assert_eq!(shortest(&it), r.last().cloned().unwrap());
        }
    }
}
