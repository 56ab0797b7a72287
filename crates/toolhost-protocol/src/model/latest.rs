//! An outgoing line whose text is decided when it is written: the transport's writer takes
//! it, the router's progress (and the service's wrapping of it) implement it.

/// A line whose text is decided when the writer reaches it, so that a value that changes
/// faster than it is written (a call's progress) waits in the queue once and is written at
/// its latest.
pub trait Latest: Send + Sync {
    /// The line to write now (without its newline), or `None` for nothing.
    fn take(&self) -> Option<String>;
}
