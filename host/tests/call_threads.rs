//! The executor's threads as a process sees them: calls of a plugin, one after the other, never
//! run on more threads than the plugin may use at once. A test binary of its own, so that the
//! call threads in this process are those of the routers below.
//!
//! A thread that was started but has not reached its loop yet takes the next job; counting it
//! out starts a thread per call while the first one does all the work. That shows only while
//! thread starts are slow (a loaded machine) and a pool grows: each round below starts from
//! an executor of its own, with no thread yet.

mod common;

use std::{sync::Arc, time::Duration};

use toolhost::{
    executor::ExecutorConfig,
    handler::{Router, RouterConfig},
    plugin::CallControl,
};

const PER_PLUGIN: usize = 2;
const ROUNDS: usize = 20;
const CALLS: usize = 50;

/// Threads of this process named `name`.
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_one_after_the_other_use_no_more_threads_than_the_plugin_limit() {
    let (registry, _dirs) = common::open_registry(&["faulty"]);
    let config = RouterConfig {
        executor: ExecutorConfig {
            per_plugin: PER_PLUGIN,
            ..ExecutorConfig::default()
        },
        ..RouterConfig::default()
    };
    let mut most = 0;
    for round in 0..ROUNDS {
        // Threads of earlier rounds idle for seconds; a round counts only those it adds (one
        // that ends meanwhile can only hide an extra one, never add one).
        let before = threads_named("toolhost-call");
        let router = Router::new(registry.clone(), config.clone());
        for i in 0..CALLS {
            let args = format!(r#"{{"value":{{"i":"{i}"}}}}"#);
            let control = Arc::new(CallControl::new(format!("{round}.{i}"), None));
            let call = router.call_tool("faulty", "echo", Some(&args), control);
            let out = tokio::time::timeout(Duration::from_secs(30), call)
                .await
                .unwrap_or_else(|_| panic!("call {round}.{i} not answered within 30s"))
                .expect("faulty.echo is called");
            assert!(!out.result.is_error, "{}", out.result.text());
            let added = threads_named("toolhost-call").saturating_sub(before);
            most = most.max(added);
            assert!(
                added <= PER_PLUGIN,
                "round {round}, call {i}: {added} call threads for calls of one plugin, \
                 one at a time, limited to {PER_PLUGIN} at once"
            );
        }
    }
    eprintln!("at most {most} call threads in a round of {CALLS} calls");
}
