//! A value shared by a plugin's calls and changed by them, without writing the lock.

use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A value that calls running at the same time read and change: a lock that a panicking call
/// does not poison. Use it for the parts of a plugin's `state` that tools change.
///
/// A tool that panics while holding it leaves what it wrote (the host's own policy for its
/// locks): keep each change one step (one insert, one assignment) and the value stays whole.
/// It serializes as the value inside, so a state holding it is carried across hot reloads.
///
/// ```
/// use std::collections::BTreeMap;
///
/// use serde::{Deserialize, Serialize};
/// use toolhost_plugin::{prelude::*, testing::TestContext};
///
/// #[derive(Default, Serialize, Deserialize)]
/// pub struct Notes {
///     book: Shared<BTreeMap<u64, String>>,
/// }
///
/// /// Store a note under an id.
/// #[tool]
/// fn put(
///     /// The note's id.
///     id: u64,
///     /// The note.
///     text: String,
///     notes: &Notes,
/// ) -> String {
///     notes.book.lock().insert(id, text);
///     format!("stored {id}")
/// }
///
/// export_plugin! { state: Notes }
///
/// # fn main() {
/// let ctx = TestContext::new().with_state(Notes::default());
/// put::tool().call(serde_json::json!({"id": 1, "text": "milk"}), &ctx);
/// assert_eq!(ctx.state::<Notes>().unwrap().book.lock()[&1], "milk");
/// # }
/// ```
#[derive(Debug, Default)]
pub struct Shared<T>(Mutex<T>);

impl<T> Shared<T> {
    /// Shares `value`. A `const fn`, so a `static` may hold one too (for data of the plugin's
    /// own threads; what calls share belongs in the declared `state`, which reloads carry).
    ///
    /// ```
    /// use toolhost_plugin::Shared;
    ///
    /// static LAST_ERROR: Shared<Option<String>> = Shared::new(None);
    ///
    /// *LAST_ERROR.lock() = Some("disk full".into());
    /// assert_eq!(LAST_ERROR.lock().as_deref(), Some("disk full"));
    /// ```
    pub const fn new(value: T) -> Self {
        Shared(Mutex::new(value))
    }

    /// Locks the value for reading and changing; waits while another call holds it. Never
    /// fails: a call that panicked while holding it leaves what it wrote.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use toolhost_plugin::Shared;
    ///
    /// let tags = Arc::new(Shared::new(vec!["a"]));
    /// let t = tags.clone();
    /// let _ = std::thread::spawn(move || {
    ///     t.lock().push("b");
    ///     panic!("a tool failed");
    /// })
    /// .join();
    /// assert_eq!(*tags.lock(), ["a", "b"]);
    /// ```
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value inside, once nothing else shares it.
    ///
    /// ```
    /// use toolhost_plugin::Shared;
    ///
    /// let counts = Shared::new(vec![1]);
    /// counts.lock().push(2);
    /// assert_eq!(counts.into_inner(), [1, 2]);
    ///
    /// // It serializes as the value inside: a state holding it survives a reload.
    /// let back: Shared<Vec<u8>> = serde_json::from_str("[3]").unwrap();
    /// assert_eq!(serde_json::to_string(&back).unwrap(), "[3]");
    /// ```
    pub fn into_inner(self) -> T {
        self.0.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: Serialize> Serialize for Shared<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.lock().serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Shared<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Shared::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_while_locked_leaves_the_value_usable() {
        let shared = std::sync::Arc::new(Shared::new(vec![1]));
        let s = shared.clone();
        let _ = std::thread::spawn(move || {
            let mut v = s.lock();
            v.push(2);
            panic!("in the middle");
        })
        .join();
        assert_eq!(*shared.lock(), [1, 2]);
        assert_eq!(serde_json::to_string(&*shared).unwrap(), "[1,2]");
        let back: Shared<Vec<u8>> = serde_json::from_str("[3]").unwrap();
        assert_eq!(back.into_inner(), [3]);
    }
}
