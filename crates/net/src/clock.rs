//! The daemon's clock edge: a monotonic `Instant` turned into the protocol's
//! `Time` (nanoseconds since the daemon started), and the wall clock that
//! the directory's validity period is checked against. The only place in
//! the daemon that reads a clock.

use hopwise_proto::time::Time;
use std::time::{Duration, Instant, SystemTime};

/// The wall clock, for the directory's validity period (`valid_after`,
/// `valid_until`) when a config is loaded and when the test bed signs its
/// directory; the functions that check it take the time as an argument.
#[allow(clippy::disallowed_methods)] // the wall-clock edge of the daemon
pub fn wall_now() -> SystemTime {
    SystemTime::now()
}

#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    #[allow(clippy::disallowed_methods)] // the clock edge of the daemon
    pub fn new() -> Clock {
        Clock {
            start: Instant::now(),
        }
    }

    /// Now, as protocol time.
    #[allow(clippy::disallowed_methods)] // the clock edge of the daemon
    pub fn now(&self) -> Time {
        Time::from_nanos(self.start.elapsed().as_nanos() as u64)
    }

    /// A protocol time as a tokio deadline.
    pub fn deadline(&self, t: Time) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.start + Duration::from_nanos(t.as_nanos()))
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}
