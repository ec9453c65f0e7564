//! Capped exponential backoff with jitter, for stores that cannot announce changes.

use std::time::Duration;

use rand::Rng;

/// Delays that double from `min` up to `max`, each drawn uniformly from `[d/2, d]` so that
/// pollers spread out ("equal jitter").
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    next: Duration,
    min: Duration,
    max: Duration,
}

impl Backoff {
    pub(crate) fn new(min: Duration, max: Duration) -> Backoff {
        Backoff { next: min, min, max }
    }

    /// The next delay.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        let half = d / 2;
        half + Duration::from_micros(rand::rng().random_range(0..=half.as_micros() as u64))
    }

    /// Starts again from the minimum (after something changed).
    pub(crate) fn reset(&mut self) {
        self.next = self.min;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_to_cap_with_jitter() {
        let mut b = Backoff::new(Duration::from_millis(4), Duration::from_millis(100));
        let ds: Vec<_> = (0..10).map(|_| b.next_delay()).collect();
        assert!(ds[0] >= Duration::from_millis(2) && ds[0] <= Duration::from_millis(4));
        assert!(ds.iter().all(|d| *d <= Duration::from_millis(100)));
        assert!(ds[9] >= Duration::from_millis(50));
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(4));
    }
}
