//! The best page's worth of matches of a traversal ([`super::driver`]).

use super::query::Key;

/// The best `keep` keys offered, kept by selection: keys gather up to twice `keep`, then the
/// best `keep` are selected (linear time) and the rest dropped; past that, a key no better
/// than the worst kept is not gathered. Newest first, a round's documents arrive oldest first,
/// so a heap would replace its worst at nearly every key.
pub(super) struct Best {
    keep: usize,
    keys: Vec<Key>,
    /// The worst key kept, once `keep` are.
    floor: Option<Key>,
}

impl Best {
    pub(super) fn new(keep: usize) -> Best {
        Best {
            keep,
            keys: Vec::with_capacity(keep.min(10_000).saturating_mul(2)),
            floor: None,
        }
    }

    pub(super) fn offer(&mut self, key: Key) {
        if self.floor.is_some_and(|f| key <= f) {
            return;
        }
        self.keys.push(key);
        if self.keys.len() >= self.keep.saturating_mul(2).max(self.keep + 64) {
            self.compact();
        }
    }

    /// Keeps the best `keep` and notes the worst of them.
    fn compact(&mut self) {
        if self.keep == 0 {
            self.keys.clear();
            return;
        }
        if self.keys.len() > self.keep {
            self.keys
                .select_nth_unstable_by(self.keep - 1, |a, b| b.cmp(a));
            self.keys.truncate(self.keep);
        }
        if self.keys.len() == self.keep {
            self.floor = self.keys.iter().min().copied();
        }
    }

    /// The worst key kept as of the last selection, if `keep` were: a key below it cannot enter.
    pub(super) fn floor(&self) -> Option<Key> {
        self.floor
    }

    /// The worst of the best `keep`, once `keep` have been offered.
    pub(super) fn worst(&mut self) -> Option<Key> {
        self.compact();
        self.floor
    }

    /// The best `keep` but the first `skip` of them, best first: the `skip` best are set apart
    /// by a selection (linear time) and left unsorted, so a deep page sorts only itself.
    pub(super) fn into_sorted_after(mut self, skip: usize) -> Vec<Key> {
        self.compact();
        if skip >= self.keys.len() {
            return Vec::new();
        }
        if skip > 0 {
            self.keys.select_nth_unstable_by(skip - 1, |a, b| b.cmp(a));
        }
        let mut page = self.keys.split_off(skip);
        page.sort_unstable_by(|a, b| b.cmp(a));
        page
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> Key {
        // Ties on `created_at` in threes, so the id decides among them.
        Key {
            score: (i % 2) as u32,
            created_at: ((i * 7919) % 101) as i64 / 3,
            id: i,
            segment: 0,
            doc: i as u32,
        }
    }

    #[test]
    fn a_page_after_a_skip_is_the_full_order_cut() {
        for n in [0u64, 1, 5, 64, 300, 1_000] {
            let keys: Vec<Key> = (0..n).map(|i| key((i * 37) % n.max(1))).collect();
            let mut all = keys.clone();
            all.sort_unstable_by(|a, b| b.cmp(a));
            for (skip, size) in [(0, 10), (3, 7), (40, 20), (290, 20), (995, 20)] {
                let mut best = Best::new(skip + size);
                for k in &keys {
                    best.offer(*k);
                }
                let want: Vec<Key> = all.iter().skip(skip).take(size).copied().collect();
                assert_eq!(
                    best.into_sorted_after(skip),
                    want,
                    "{n} keys, skip {skip}, size {size}"
                );
            }
        }
    }
}
