//! A sliding anti-replay window over 64-bit datagram counters (the bitmap
//! scheme of RFC 6479, as WireGuard uses it).

/// Counters tracked below the highest one seen.
pub const WINDOW: u64 = 2048;
const WORDS: usize = (WINDOW / 64) as usize;

/// Which counters arrived. A counter is accepted once, and only if it is
/// above the window's lower edge (`highest − WINDOW`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayWindow {
    /// Highest counter seen plus one; 0 before the first.
    top: u64,
    bits: [u64; WORDS],
}

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow {
            top: 0,
            bits: [0; WORDS],
        }
    }
}

impl ReplayWindow {
    fn bit(c: u64) -> (usize, u64) {
        let i = c % WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// Whether `c` would be accepted (new and not too old). Check before
    /// authenticating, [`ReplayWindow::insert`] after.
    pub fn check(&self, c: u64) -> bool {
        if c >= self.top {
            return true;
        }
        if c + WINDOW < self.top {
            return false;
        }
        let (w, m) = Self::bit(c);
        self.bits[w] & m == 0
    }

    /// Records `c` (which passed [`ReplayWindow::check`] and authentication).
    pub fn insert(&mut self, c: u64) {
        if c >= self.top {
            let gap = c - self.top + 1;
            if gap >= WINDOW {
                self.bits = [0; WORDS];
            } else {
                for x in self.top..=c {
                    let (w, m) = Self::bit(x);
                    self.bits[w] &= !m;
                }
            }
            self.top = c + 1;
        }
        let (w, m) = Self::bit(c);
        self.bits[w] |= m;
    }

    /// Checks and records in one step; false for a replay or a too-old counter.
    pub fn accept(&mut self, c: u64) -> bool {
        if !self.check(c) {
            return false;
        }
        self.insert(c);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_reordered_replayed_and_old() {
        let mut w = ReplayWindow::default();
        for c in 0..5000 {
            assert!(w.accept(c));
            assert!(!w.accept(c), "replay of {c}");
        }
        // Reordering inside the window is fine, once.
        let mut w = ReplayWindow::default();
        assert!(w.accept(100));
        assert!(w.accept(50));
        assert!(!w.accept(50));
        assert!(w.accept(99));
        // A jump forgets everything older than the window.
        assert!(w.accept(100 + 3 * WINDOW));
        assert!(!w.accept(100));
        assert!(!w.accept(100 + WINDOW));
        assert!(w.accept(100 + 2 * WINDOW + 1));
        assert!(!w.accept(100 + 2 * WINDOW + 1));
    }
}
