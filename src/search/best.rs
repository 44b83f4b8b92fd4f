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

    /// The best `keep`, best first.
    pub(super) fn into_sorted(mut self) -> Vec<Key> {
        self.compact();
        self.keys.sort_unstable_by(|a, b| b.cmp(a));
        self.keys
    }
}
