//! Plugins that misbehave on purpose (the `hostile` fixture): native threads still running at
//! reload, invalid UTF-8 through the ABI, panics in the state hand-off; and proof that
//! `unload` runs and a retired version is unmapped (issue #14 items 1, 13, 16, 20).

mod common;

use std::{
    path::{Path, PathBuf},
    sync::{Arc, OnceLock},
    time::Duration,
};

use common::registry::{build_mark, follow, library_in, with_build_mark, Folder, Served, WAIT};
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::sync::broadcast::{self, error::RecvError};
use toolhost::{
    model::call_result_json,
    plugin::{CallControl, CallResult, LoadedPlugin},
    registry::{Lease, Registry, RegistryConfig, RegistryEvent, WatchHandle},
};

const BUILD_MARK: &[u8; 32] = b"toolhost-hostile-build-000000000";

fn library(name: &str) -> Vec<u8> {
    library_in(common::built_plugins(), name)
}

/// The hostile fixture's bytes.
fn hostile() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| library("hostile"))
}

/// The fixture with its build identity set to `id` (at most 32 bytes): another build, whose
/// `which_build` answers `id`.
fn build(id: &str) -> Vec<u8> {
    with_build_mark(hostile(), BUILD_MARK, id)
}

fn id_of(answer: &str) -> &str {
    answer.trim_end_matches('.')
}

/// Where every hostile version of this test process notes its unload.
fn marker() -> &'static Path {
    static MARKER: OnceLock<(TempDir, PathBuf)> = OnceLock::new();
    &MARKER
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("unloads");
            // Set before any plugin is loaded; read by the plugin (same process).
            std::env::set_var("TOOLHOST_TEST_UNLOAD_MARKER", &file);
            (dir, file)
        })
        .1
}

fn unloaded(id: &str) -> bool {
    noted("unloaded", id)
}

/// Whether the fixture noted `<what> <build id>` in the marker file.
fn noted(what: &str, id: &str) -> bool {
    let line = format!("{what} {}", String::from_utf8_lossy(&build_mark(id)));
    std::fs::read_to_string(marker())
        .unwrap_or_default()
        .lines()
        .any(|l| l == line)
}

type Opened = (
    Arc<Registry>,
    broadcast::Receiver<RegistryEvent>,
    WatchHandle,
);

/// A plugin folder for the hostile fixture (which notes its unloads in [`marker`]).
fn folder() -> Folder {
    marker();
    Folder::new()
}

/// A fresh folder serving the hostile build `id` (the registry's defaults), followed.
fn serve_build(id: &str) -> Served {
    let open = |f: &Folder| Registry::open(f.config()).unwrap();
    folder().serve("hostile.so", &build(id), open)
}

impl Folder {
    /// Puts a build of the hostile fixture in place as `hostile.so`.
    fn put_hostile(&self, bytes: &[u8]) -> PathBuf {
        self.put("hostile.so", bytes)
    }

    fn open_with(&self, config: RegistryConfig) -> Opened {
        let reg = Registry::open(config).unwrap();
        let (rx, watch) = follow(&reg);
        (reg, rx, watch)
    }
}

async fn next(
    rx: &mut broadcast::Receiver<RegistryEvent>,
    within: Duration,
) -> Option<RegistryEvent> {
    tokio::time::timeout(within, async {
        loop {
            match rx.recv().await {
                Ok(e) => return e,
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => panic!("event stream closed"),
            }
        }
    })
    .await
    .ok()
}

async fn call(reg: &Registry, tool: &'static str, args: Value) -> CallResult {
    common::registry::call(reg, "hostile", tool, args).await
}

async fn serving_build(reg: &Registry) -> String {
    id_of(&call(reg, "which_build", json!({})).await.text()).to_string()
}

/// The processes the constructor of build `id` ran in, as it noted them.
fn constructed_in(id: &str) -> Vec<u32> {
    let prefix = format!("constructor {} ", String::from_utf8_lossy(&build_mark(id)));
    std::fs::read_to_string(marker())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix)?.parse().ok())
        .collect()
}

/// Issue 19, finding 5: a library's settings are decided before any of its code runs. A build
/// whose constructor notes the process it runs in, in a file named otherwise than the plugin
/// it declares, whose table puts it in a sandboxed worker: its constructor runs in that
/// worker, never in the host.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_whose_table_asks_for_a_worker_runs_no_code_in_the_host() {
    let f = folder();
    f.put("dropped.so", &build("ctor-dropped"));
    let notes = marker().parent().unwrap();
    let confine = if toolhost::worker::probe_sandbox().enforceable().is_ok() {
        format!("[plugin.hostile.sandbox]\nwrite = [{notes:?}]\n")
    } else {
        "[plugin.hostile]\nisolate = true\n".to_string()
    };
    std::fs::write(
        f.path("toolhost.toml"),
        format!(
            "[plugin.hostile]\nenv = {{ TOOLHOST_TEST_UNLOAD_MARKER = {:?} }}\n{confine}",
            marker()
        ),
    )
    .unwrap();
    let mut config = f.config();
    config.settings = Arc::new(toolhost::config::LiveConfig::open(f.dir.path(), None).unwrap());
    config.workers = Some(Arc::new(toolhost::worker::WorkerConfig::new(env!(
        "CARGO_BIN_EXE_toolhost-worker"
    ))));
    let reg = Registry::open(config).unwrap();
    let pids = constructed_in("ctor-dropped");
    assert!(
        !pids.contains(&std::process::id()),
        "its constructor ran in the host ({pids:?}); failures: {:?}",
        reg.failures()
    );
    let plugin = reg
        .get("hostile")
        .unwrap_or_else(|| panic!("{:?}", reg.failures()));
    let keeper = plugin.worker_pid().expect("in a worker");
    // The plugin runs in a child of the worker process the host started (its keeper).
    let [pid] = pids[..] else {
        panic!("its code ran once, in its worker: {pids:?}")
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    let parent: u32 = rest.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_eq!(parent, keeper, "its code ran in its worker, once");
}

#[test]
fn text_that_is_not_utf8_becomes_an_error_result() {
    let f = folder();
    let file = f.put_hostile(&build("utf8"));
    let p = LoadedPlugin::load(&file, &f.shadow_dir()).unwrap();
    let r = p.call("bad_utf8", "{}", &CallControl::new("t", None));
    assert!(r.is_error);
    assert_eq!(r.text(), "the plugin returned text that is not valid UTF-8");
    // What goes on the wire is JSON.
    let line = call_result_json(&r).to_string();
    assert!(serde_json::from_str::<Value>(&line).is_ok());
}

/// Issue #14 item 16: `unload` really runs, when the last lease drops, and the version is
/// unmapped afterwards, also when its state hand-off panicked.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unload_runs_after_the_last_lease_and_a_panicked_version_is_unmapped() {
    use toolhost::plugin::still_mapped;
    // Removed while a call holds it: unloaded only when that lease drops.
    let ((f, reg, mut rx, _watch), lease) = removed_while_leased("unload-a").await;
    let shadow_a = lease.shadow_path().to_path_buf();
    assert!(!unloaded("unload-a"), "unloaded while a lease holds it");
    assert!(still_mapped(&shadow_a));
    drop(lease);
    assert!(unloaded("unload-a"), "unload did not run");
    assert!(!still_mapped(&shadow_a));

    // Saving its state panics (the SDK catches it): the swap goes on without the state, and
    // the version that panicked is unloaded and unmapped.
    f.put_hostile(&build("unload-b"));
    let e = next(&mut rx, WAIT).await;
    assert!(matches!(e, Some(RegistryEvent::Added { .. })), "{e:?}");
    let r = call(&reg, "break_state", json!({"save": true})).await;
    assert!(!r.is_error, "{}", r.text());
    let shadow_b = reg.get("hostile").unwrap().shadow_path().to_path_buf();
    replace_with(&f, &reg, &mut rx, "unload-c").await;
    assert_gone("unload-b", &shadow_b);
}

/// Issue #14 item 20: a new version that refuses (panics restoring) the state does not take
/// over; the old one keeps serving with its state; the same bytes are not reported twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_hand_off_keeps_the_old_version_and_its_state() {
    let (f, reg, mut rx, _watch) = serve_build("state-a");
    let path = f.path("hostile.so");
    for item in ["x", "y"] {
        call(&reg, "append", json!({"item": item})).await;
    }
    call(&reg, "break_state", json!({"restore": true})).await;
    let refused = build("state-b");
    f.put_hostile(&refused);
    match next(&mut rx, WAIT).await {
        Some(RegistryEvent::Failed { file, error }) => {
            assert_eq!(file, path);
            assert!(
                error.contains("refused the old version's state")
                    && error.contains("restore_state panics on purpose"),
                "{error}"
            );
        }
        e => panic!("expected a refusal, got {e:?}"),
    }
    assert_eq!(serving_build(&reg).await, "state-a");
    assert_eq!(call(&reg, "items", json!({})).await.text(), "x,y");
    assert!(unloaded("state-b"), "the refused version was unloaded");

    // The same bytes again (a new file with the same content): not reported a second time.
    f.put_hostile(&refused);
    let e = next(&mut rx, Duration::from_millis(1500)).await;
    assert_eq!(e, None, "the same broken bytes were reported again");
    // Once the old version no longer poisons its state, another build takes over with it.
    call(&reg, "break_state", json!({})).await;
    f.put_hostile(&build("state-c"));
    let e = next(&mut rx, WAIT).await;
    assert!(matches!(e, Some(RegistryEvent::Replaced { .. })), "{e:?}");
    assert_eq!(serving_build(&reg).await, "state-c");
    assert_eq!(call(&reg, "items", json!({})).await.text(), "x,y");
}

/// Issue #14 item 1: a thread the plugin started (raw pthread or std::thread) still runs when
/// its version is replaced and removed: the library stays mapped, with a warning, and the host
/// lives on.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_plugin_thread_still_running_keeps_its_library_mapped() {
    use toolhost::plugin::{kept_for_threads_count, still_mapped};
    let (f, reg, mut rx, _watch) = serve_build("thread-a");
    let mut shadows = Vec::new();
    for (i, kind) in ["raw", "std"].into_iter().enumerate() {
        let r = call(&reg, "spawn_thread", json!({"kind": kind})).await;
        assert_eq!(r.text(), "started");
        shadows.push(reg.get("hostile").unwrap().shadow_path().to_path_buf());
        let before = kept_for_threads_count();
        f.put_hostile(&build(&format!("thread-{i}")));
        let e = next(&mut rx, WAIT).await;
        assert!(matches!(e, Some(RegistryEvent::Replaced { .. })), "{e:?}");
        assert_eq!(
            kept_for_threads_count(),
            before + 1,
            "the {kind} thread was not noticed"
        );
        assert!(still_mapped(shadows.last().unwrap()));
    }
    // The host still works, and the threads still run their (still mapped) code.
    assert_eq!(serving_build(&reg).await, "thread-1");
    tokio::time::sleep(Duration::from_millis(100)).await;
    std::fs::remove_file(f.path("hostile.so")).unwrap();
    let e = next(&mut rx, WAIT).await;
    assert!(matches!(e, Some(RegistryEvent::Removed { .. })), "{e:?}");
    for s in &shadows {
        assert!(still_mapped(s));
    }
}

/// A version without threads of its own is unmapped as usual: the thread check does not keep
/// every library.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_version_without_threads_is_unmapped() {
    use toolhost::plugin::still_mapped;
    let (f, reg, mut rx, _watch) = serve_build("plain-a");
    for i in 0..20 {
        call(&reg, "append", json!({"item": "i"})).await;
        let shadow = reg.get("hostile").unwrap().shadow_path().to_path_buf();
        f.put_hostile(&build(&format!("plain-{i}")));
        let e = next(&mut rx, WAIT).await;
        assert!(matches!(e, Some(RegistryEvent::Replaced { .. })), "{e:?}");
        assert!(!still_mapped(&shadow), "reload {i}: kept mapped");
    }
}

/// Issue #14 item 8: dropping the watcher (what the host does at EOF) does not wait for a
/// plugin's 60 s `on_load`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stopping_the_watcher_does_not_wait_for_a_slow_on_load() {
    let (f, _reg, _rx, watch) = serve_build("slow-a");
    f.put_hostile(&build("slowload-60000"));
    // Debounce and stability checks are ~60 ms: the watcher is inside on_load by now.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stops_without_waiting(watch, "on_load");
}

/// Drops `watch` (what the host does at EOF) and fails if that waits for the plugin code
/// running `what` (which takes 60 s): a generous bound, no hang.
fn stops_without_waiting(watch: WatchHandle, what: &str) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(watch);
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(20)).is_ok(),
        "dropping the watcher waited for {what}"
    );
}

/// Issue #14 item 7: a slow `on_load` (5 s) delays neither the start (the other plugins serve
/// when `open` returns) nor another plugin's reload; it joins when ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_on_load_delays_neither_start_up_nor_other_reloads() {
    let f = folder();
    f.put_hostile(&build("slowload-5000"));
    f.put("calc.so", &library("calc"));
    let mut config = f.config();
    config.start_wait = Duration::from_millis(200);
    let started = std::time::Instant::now();
    let (reg, mut rx, _watch) = f.open_with(config);
    eprintln!(
        "open returned after {:?} (on_load takes 5 s)",
        started.elapsed()
    );
    assert!(reg.get("calc").is_some(), "calc serves at once");
    assert!(
        reg.get("hostile").is_none(),
        "open waited for the slow on_load"
    );
    // While hostile is still in its on_load, another plugin comes and goes through.
    f.put("text.so", &library("text"));
    let mut order = Vec::new();
    while order.len() < 2 {
        match next(&mut rx, WAIT).await {
            Some(RegistryEvent::Added { name, .. }) => order.push(name),
            Some(RegistryEvent::Failed { error, .. }) => panic!("{error}"),
            Some(_) => {}
            None => panic!("timed out; added so far: {order:?}"),
        }
    }
    assert_eq!(order, ["text", "hostile"]);
    assert_eq!(serving_build(&reg).await, "slowload-5000");
}

/// Issue #14 item 7: `on_load` has a time limit of its own; past it that version is reported
/// and the previous one keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_on_load_past_its_time_limit_is_given_up() {
    let f = folder();
    let path = f.put_hostile(&build("limit-a"));
    let mut config = f.config();
    config.load_timeout = Duration::from_millis(500);
    let (reg, mut rx, _watch) = f.open_with(config);
    f.put_hostile(&build("slowload-3000"));
    match next(&mut rx, WAIT).await {
        Some(RegistryEvent::Failed { file, error }) => {
            assert_eq!(file, path);
            assert_eq!(
                error,
                "on_load did not return within 500ms: this version is given up; the previous \
                 version keeps serving"
            );
        }
        e => panic!("expected a failure, got {e:?}"),
    }
    assert_eq!(serving_build(&reg).await, "limit-a");
}

/// Serves build `id`, leases it, and removes its file: the lease returned is the version's
/// last holder.
async fn removed_while_leased(id: &str) -> (Served, Lease) {
    let (f, reg, mut rx, watch) = serve_build(id);
    assert_eq!(serving_build(&reg).await, id);
    let lease = reg.lease("hostile").await.unwrap();
    std::fs::remove_file(f.path("hostile.so")).unwrap();
    let e = next(&mut rx, WAIT).await;
    assert!(matches!(e, Some(RegistryEvent::Removed { .. })), "{e:?}");
    ((f, reg, rx, watch), lease)
}

/// Puts build `id` in place of the one serving and checks it takes over.
async fn replace_with(
    f: &Folder,
    reg: &Registry,
    rx: &mut broadcast::Receiver<RegistryEvent>,
    id: &str,
) {
    f.put_hostile(&build(id));
    let e = next(rx, WAIT).await;
    assert!(matches!(e, Some(RegistryEvent::Replaced { .. })), "{e:?}");
    assert_eq!(serving_build(reg).await, id);
}

/// Runs `f` with the warnings and errors logged on this thread captured; returns them.
fn logs_of(f: impl FnOnce()) -> String {
    use std::io::{Read, Seek};
    let mut file = tempfile::tempfile().unwrap();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(file.try_clone().unwrap())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let mut text = String::new();
    file.rewind().unwrap();
    file.read_to_string(&mut text).unwrap();
    text
}

/// Issue #14 item 20: a panic inside a plugin's `unload` (caught by the SDK: it must not
/// unwind into the host, where it would abort the process) is logged at error level with the
/// plugin's name, the version is still unmapped, and the host goes on: the next version
/// takes over and serves, also when the panic happens in a reload's swap.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_panic_in_unload_is_logged_and_the_host_goes_on() {
    // Removed while this test holds the last lease: the unload runs on this thread when it
    // drops, under a subscriber that captures what it logs.
    let ((f, reg, mut rx, _watch), lease) = removed_while_leased("unloadpanic-a").await;
    let shadow_a = lease.shadow_path().to_path_buf();
    let log = logs_of(|| drop(lease));
    assert_gone("unloadpanic-a", &shadow_a);
    assert!(
        log.contains("ERROR")
            && log.contains("plugin=\"hostile\"")
            && log.contains("unloading the plugin panicked: unload panics on purpose"),
        "the panic in unload was not logged: {log:?}"
    );

    // The same panic inside a reload (the swap drops the old version on the loader's thread):
    // the new version serves with the old one's state, the old one is unmapped.
    f.put_hostile(&build("unloadpanic-b"));
    let e = next(&mut rx, WAIT).await;
    assert!(matches!(e, Some(RegistryEvent::Added { .. })), "{e:?}");
    call(&reg, "append", json!({"item": "kept"})).await;
    let shadow_b = reg.get("hostile").unwrap().shadow_path().to_path_buf();
    replace_with(&f, &reg, &mut rx, "after-panic-c").await;
    assert_eq!(call(&reg, "items", json!({})).await.text(), "kept");
    assert_gone("unloadpanic-b", &shadow_b);
}

/// Checks that version `id`, mapped from `shadow`, was unloaded and unmapped.
#[cfg(target_os = "linux")]
fn assert_gone(id: &str, shadow: &Path) {
    assert!(unloaded(id), "{id}: unload did not run");
    assert!(
        !toolhost::plugin::still_mapped(shadow),
        "{id} is still mapped"
    );
}

/// Issue #14 item 8: dropping the watcher (what the host does at EOF) does not wait for plugin
/// code running on the watcher thread itself either: here a 60 s restore of the old version's
/// state (a reload's hand-off runs there, while `on_load` has a thread of its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stopping_the_watcher_does_not_wait_for_a_slow_state_hand_off() {
    let (f, reg, _rx, watch) = serve_build("handoff-a");
    assert_eq!(serving_build(&reg).await, "handoff-a");
    f.put_hostile(&build("slowrestore-60000"));
    common::eventually(WAIT, "the new version restores the state", || {
        noted("restoring", "slowrestore-60000")
    })
    .await;
    stops_without_waiting(watch, "the state hand-off");
}
