//! Running one check per server side by side, a few at a time: for the tests whose time is
//! mostly waiting (idle limits, measurement windows), so that the waits overlap instead of
//! adding up. Each item still gets the whole check; a panic in any fails the test (the scope
//! re-raises it after the others of its group end), and its message names the item as before.

/// Runs `f` on every item, at most `width` at a time (each group on scoped threads, joined
/// before the next starts).
pub fn each_at_most<T: Send>(items: Vec<T>, width: usize, f: impl Fn(T) + Sync) {
    assert!(width >= 1);
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        let group: Vec<T> = items.by_ref().take(width).collect();
        std::thread::scope(|s| {
            for it in group {
                let f = &f;
                s.spawn(move || f(it));
            }
        });
    }
}
