//! A sliding anti-replay window over 64-bit datagram counters (the bitmap
//! scheme of RFC 6479, as WireGuard uses it).

/// Counters tracked below the highest one seen.
pub const WINDOW: u64 = 2048;
const WORDS: usize = (WINDOW / 64) as usize;

/// Which counters arrived. A counter is accepted once, and only if it is
/// above the window's lower edge (`highest − WINDOW`). `u64::MAX` is never
/// accepted: a sender must rekey before it (as WireGuard's
/// `REJECT_AFTER_MESSAGES` is below it), and refusing it keeps `highest + 1`
/// representable whatever a peer sends.
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
        if c == u64::MAX {
            return false;
        }
        if c >= self.top {
            return true;
        }
        if self.top - c > WINDOW {
            return false;
        }
        let (w, m) = Self::bit(c);
        self.bits[w] & m == 0
    }

    /// Records `c` (which passed [`ReplayWindow::check`] and authentication).
    /// `u64::MAX` is ignored.
    pub fn insert(&mut self, c: u64) {
        if c == u64::MAX {
            return;
        }
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

    /// Counters at the top of the range: `u64::MAX` is refused (a peer that
    /// sent it twice used to hang the window in an endless loop), the ones
    /// below it behave as anywhere else.
    #[test]
    fn counters_at_the_top_of_the_range() {
        for first in [None, Some(0), Some(5), Some(u64::MAX - 3 * WINDOW)] {
            let mut w = ReplayWindow::default();
            if let Some(c) = first {
                assert!(w.accept(c));
            }
            assert!(!w.accept(u64::MAX));
            assert!(!w.accept(u64::MAX));
            w.insert(u64::MAX);
            assert!(w.accept(u64::MAX - 1));
            assert!(!w.accept(u64::MAX - 1));
            assert!(w.accept(u64::MAX - 2));
            assert!(!w.accept(u64::MAX - 1 - WINDOW - 1), "below the window");
            assert!(w.accept(u64::MAX - WINDOW), "the window's lowest counter");
            if let Some(c) = first {
                assert!(!w.accept(c), "{c} is far below the window");
            }
        }
    }
}
