//! The bytes of request bodies the server holds at once, in all: without a bound across
//! requests, every connection may hold a body of the largest size while it arrives, and
//! `max-connections × max-body-bytes` is a lot of memory. A body takes its bytes from the
//! budget up front when it declares its length (`Content-Length`), else as it grows; what it
//! cannot take is refused (503) rather than waited for. Its bytes are given back when the
//! request that carried them is answered (a call's arguments live as long as the call).
//!
//! An eighth of the budget is kept for small bodies (64 KiB or less, declared): a crowd of
//! large bodies, finished or not, cannot keep an ordinary call out.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A body declaring at most this many bytes may use the part of the budget kept for small ones.
pub(super) const SMALL_BODY: usize = 64 << 10;

/// The budget: a semaphore of bytes.
pub(super) struct BodyBudget {
    bytes: Arc<Semaphore>,
    /// The budget in all.
    total: usize,
    /// What only small bodies may take.
    kept: usize,
}

/// Bytes taken from the budget; given back when dropped.
#[derive(Default)]
pub(super) struct Held {
    permit: Option<OwnedSemaphorePermit>,
    bytes: usize,
}

impl Held {
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl BodyBudget {
    /// A budget of `total` bytes, raised if need be so one body of `max_body` bytes fits
    /// beside the part kept for small ones.
    pub(super) fn new(total: usize, max_body: usize) -> Self {
        let kept = total / 8;
        let needed = max_body.saturating_add(kept);
        let total = total.max(needed).min(Semaphore::MAX_PERMITS);
        BodyBudget {
            bytes: Arc::new(Semaphore::new(total)),
            total,
            kept,
        }
    }

    /// The budget in all, in bytes.
    pub(super) fn total(&self) -> usize {
        self.total
    }

    /// Takes `n` more bytes into `held`; false if they are not free (for a body that is not
    /// `small`, if taking them would eat into the part kept for small ones).
    pub(super) fn take(&self, held: &mut Held, n: usize, small: bool) -> bool {
        if n == 0 {
            return true;
        }
        // Advisory (another request may take bytes meanwhile): the semaphore alone keeps
        // the total, this only keeps large bodies out of the small ones' part.
        if !small && self.bytes.available_permits() < n.saturating_add(self.kept) {
            return false;
        }
        let Ok(permits) = u32::try_from(n) else {
            return false;
        };
        let Ok(permit) = self.bytes.clone().try_acquire_many_owned(permits) else {
            return false;
        };
        match &mut held.permit {
            Some(p) => p.merge(permit),
            None => held.permit = Some(permit),
        }
        held.bytes += n;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_bodies_leave_room_for_small_ones() {
        let budget = BodyBudget::new(800, 100);
        assert_eq!(budget.total(), 800);
        let mut large = Vec::new();
        loop {
            let mut h = Held::default();
            if !budget.take(&mut h, 100, false) {
                break;
            }
            large.push(h);
        }
        // 700 of 800: the last 100 are kept for small bodies.
        assert_eq!(large.len(), 7);
        let mut small = Held::default();
        assert!(budget.take(&mut small, 60, true));
        assert!(budget.take(&mut small, 40, true));
        assert_eq!(small.bytes(), 100);
        assert!(
            !budget.take(&mut Held::default(), 1, true),
            "over the total"
        );
        // Given back when dropped.
        drop(large.pop());
        assert!(
            !budget.take(&mut Held::default(), 100, false),
            "the kept part is used"
        );
        drop(small);
        assert!(budget.take(&mut Held::default(), 100, false));
    }

    #[test]
    fn the_budget_fits_one_largest_body() {
        let budget = BodyBudget::new(1000, 4000);
        assert_eq!(budget.total(), 4000 + 125);
        assert!(budget.take(&mut Held::default(), 4000, false));
    }
}
