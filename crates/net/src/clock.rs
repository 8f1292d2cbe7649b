//! The daemon's clock edge: a monotonic `Instant` turned into the protocol's
//! `Time` (nanoseconds since the daemon started). The only place in the
//! daemon that reads a clock.

use hopwise_proto::time::Time;
use std::time::{Duration, Instant};

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
