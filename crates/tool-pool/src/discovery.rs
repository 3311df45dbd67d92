//! The session's discovered tools: capped, oldest trimmed first.

use std::collections::{BTreeSet, VecDeque};

/// Deferred tools the model has discovered in this session, in discovery order.
///
/// Capped: when it grows past [`Discovered::CAP`], the oldest entries are dropped until
/// [`Discovered::TRIM_TO`] remain, so a long session cannot grow it without bound.
#[derive(Debug, Clone, Default)]
pub(crate) struct Discovered {
    order: VecDeque<String>,
    set: BTreeSet<String>,
}

impl Discovered {
    /// The most names kept.
    pub const CAP: usize = 500;
    /// How many remain after a trim.
    pub const TRIM_TO: usize = 400;

    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a name (a name already present keeps its place); returns whether it was new.
    pub fn insert(&mut self, name: &str) -> bool {
        if self.set.contains(name) {
            return false;
        }
        self.order.push_back(name.to_owned());
        self.set.insert(name.to_owned());
        if self.order.len() > Self::CAP {
            while self.order.len() > Self::TRIM_TO {
                if let Some(oldest) = self.order.pop_front() {
                    self.set.remove(&oldest);
                }
            }
        }
        true
    }

    /// Forgets a name (its tool left).
    pub fn remove(&mut self, name: &str) -> bool {
        if self.set.remove(name) {
            self.order.retain(|n| n != name);
            true
        } else {
            false
        }
    }

    /// Whether a name was discovered.
    pub fn contains(&self, name: &str) -> bool {
        self.set.contains(name)
    }

    /// The names in discovery order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.order.iter().map(String::as_str)
    }

    /// How many names are held.
    pub fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_trims_the_oldest_first() {
        let mut d = Discovered::new();
        for i in 0..Discovered::CAP {
            assert!(d.insert(&format!("t{i}")));
        }
        assert_eq!(d.len(), 500);
        assert!(!d.insert("t3"), "a known name is not added twice");
        d.insert("t500");
        assert_eq!(d.len(), 400);
        assert!(!d.contains("t0"));
        assert!(!d.contains("t100"));
        assert!(d.contains("t101"));
        assert!(d.contains("t500"));
        assert_eq!(d.iter().next(), Some("t101"));
    }
}
