//! The registry against real plugin libraries: hot reload under load, bad files, state hand-off,
//! unmapping and pinning, calls in flight across a reload.

mod common;

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use common::registry::{
    added, call, failed, follow, library_in, note_ids, removed, replaced, rss_kib, structured,
    variant, wait_for, with_build_mark, Folder, Served, WAIT,
};
use serde_json::json;
use toolhost::{
    plugin::{digest, CallControl, CallResult},
    registry::{Registry, RegistryConfig, RegistryEvent},
    trust::{hex, Allowlist, Trust},
};
use toolhost_test_support::elf;

fn artifacts() -> &'static Path {
    common::built_plugins()
}

/// A shared library that is no plugin: the SDK's proc-macro crate, which any build of a
/// plugin compiles (into `deps/`, under a hashed name; only a full workspace build copies it
/// next to the plugins).
fn proc_macro_library() -> Vec<u8> {
    let deps = artifacts().join("deps");
    let prefix = format!("{}toolhost_plugin_macros-", std::env::consts::DLL_PREFIX);
    let newest = std::fs::read_dir(&deps)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(&prefix) && name.ends_with(std::env::consts::DLL_SUFFIX)
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| {
            panic!(
                "no {prefix}*{} in {}",
                std::env::consts::DLL_SUFFIX,
                deps.display()
            )
        });
    std::fs::read(newest.path()).unwrap()
}

/// The bytes of the library built from crate `name`.
fn library(name: &str) -> Vec<u8> {
    library_in(artifacts(), name)
}

impl Folder {
    /// The registry's settings for this folder, giving up on a file that stays incomplete
    /// after 1 s (not 3 s), so that the suite's reports come quickly.
    fn quick_config(&self) -> RegistryConfig {
        let mut c = self.config();
        c.give_up_after = Duration::from_secs(1);
        c
    }

    fn open(&self) -> Arc<Registry> {
        Registry::open(self.quick_config()).expect("open the registry")
    }

    /// Opens the registry loading only the builds that `lock` lists.
    fn open_locked(&self, lock: &Path) -> Arc<Registry> {
        let mut config = self.quick_config();
        config.trust = Trust {
            allowlist: Some(Allowlist::load(lock).unwrap()),
            allow_shared: false,
        };
        Registry::open(config).expect("open the registry")
    }

    /// (Re)writes the lock file `plugins.lock` beside the shadow folder, listing the builds
    /// in `files`; put in place at once, mode 0644 whatever the umask (the lock file is held
    /// to the trust rules).
    fn write_lock(&self, files: &[&Path]) -> PathBuf {
        let body: String = files
            .iter()
            .map(|p| format!("{}  x\n", hex(&digest(&std::fs::read(p).unwrap()))))
            .collect();
        let lock = self.shadow.path().join("plugins.lock");
        let tmp = lock.with_extension("tmp");
        std::fs::write(&tmp, body).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        std::fs::rename(&tmp, &lock).unwrap();
        lock
    }
}

/// A fresh folder holding the builds of `crates` (as `NAME.so`), and their files.
fn folder_with<const N: usize>(crates: [&str; N]) -> (Folder, [PathBuf; N]) {
    let f = Folder::new();
    let files = crates.map(|c| f.put(&format!("{c}.so"), &library(c)));
    (f, files)
}

/// A fresh folder serving `bytes` as `file`, followed.
fn serve(file: &str, bytes: &[u8]) -> Served {
    Folder::new().serve(file, bytes, Folder::open)
}

fn tool_names(reg: &Registry, plugin: &str) -> Vec<String> {
    reg.get(plugin)
        .map(|p| p.manifest().tools.iter().map(|t| t.name.clone()).collect())
        .unwrap_or_default()
}

/// The `versioned` fixture with its build mark set to `id`: a build that answers with `id`.
fn versioned(id: &str) -> Vec<u8> {
    with_build_mark(
        &library("versioned"),
        b"toolhost-versioned-build-0000000",
        id,
    )
}

/// What [`reload_under_load`] saw.
struct LoadRun {
    /// Calls that answered wrongly, with an error, or from another build than the one leased.
    wrong: Vec<String>,
    /// Right answers per build id.
    per_build: std::collections::HashMap<String, usize>,
    /// Versions that stayed mapped during the run (pinned or kept for a thread), as the
    /// difference of the process-wide counters.
    stayed_mapped: usize,
}

fn stayed_mapped() -> usize {
    toolhost::plugin::pinned_count() + toolhost::plugin::kept_for_threads_count()
}

/// Replaces the `versioned` plugin `reloads` times, alternating two builds that answer
/// differently, while `clients` tasks call `multiply` continuously: every answer must be
/// right and come from the build its lease holds. `after_reload(i)` runs after each swap.
async fn reload_under_load(
    folder: &Folder,
    reloads: usize,
    clients: u32,
    mut after_reload: impl FnMut(usize, &Registry, &[u8]),
) -> (Arc<Registry>, LoadRun) {
    let builds = [versioned("v-one"), versioned("v-two")];
    let ids: Arc<std::collections::HashMap<[u8; 32], String>> = Arc::new(
        [
            (digest(&builds[0]), "v-one".to_string()),
            (digest(&builds[1]), "v-two".to_string()),
        ]
        .into(),
    );
    let mapped_before = stayed_mapped();
    folder.put("versioned.so", &builds[0]);
    let reg = folder.open();
    let (mut rx, _watch) = follow(&reg);
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for client in 0..clients {
        let (reg, stop, ids) = (reg.clone(), stop.clone(), ids.clone());
        tasks.push(tokio::spawn(async move {
            let mut wrong = Vec::new();
            let mut per_build = std::collections::HashMap::<String, usize>::new();
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let (x, y) = (f64::from(client), f64::from(i));
                let lease = reg.lease("versioned").await.expect("versioned serves");
                let leased = ids[lease.hash()].clone();
                let args = json!({"x": x, "y": y}).to_string();
                let r = tokio::task::spawn_blocking(move || {
                    lease.call("multiply", &args, &CallControl::new("t", None))
                })
                .await
                .unwrap();
                let text = r.text();
                match text.split_once(':') {
                    Some((build, product))
                        if !r.is_error
                            && build == leased
                            && product.parse::<f64>().ok() == Some(x * y) =>
                    {
                        *per_build.entry(leased).or_default() += 1;
                    }
                    _ => wrong.push(format!("leased {leased}, got {text:?}")),
                }
            }
            (wrong, per_build)
        }));
    }
    for i in 0..reloads {
        let bytes = &builds[(i + 1) % 2];
        folder.put("versioned.so", bytes);
        replaced(&mut rx, "versioned").await;
        after_reload(i, &reg, bytes);
    }
    stop.store(true, Ordering::Relaxed);
    let mut run = LoadRun {
        wrong: Vec::new(),
        per_build: Default::default(),
        stayed_mapped: 0,
    };
    for t in tasks {
        let (wrong, per_build) = t.await.expect("a client task panicked");
        run.wrong.extend(wrong);
        for (b, n) in per_build {
            *run.per_build.entry(b).or_default() += n;
        }
    }
    run.stayed_mapped = stayed_mapped() - mapped_before;
    (reg, run)
}

impl LoadRun {
    fn assert_clean(&self) {
        assert!(
            self.wrong.is_empty(),
            "{} failed calls, first: {:?}",
            self.wrong.len(),
            self.wrong.first()
        );
        // Both builds really answered (their own code ran, not a cached older copy).
        for id in ["v-one", "v-two"] {
            assert!(
                self.per_build.get(id).copied().unwrap_or(0) > 0,
                "no answer from {id}: {:?}",
                self.per_build
            );
        }
        // Every retired version was unmapped (pinned_count and kept_for_threads_count did not
        // move).
        assert_eq!(self.stayed_mapped, 0, "versions stayed mapped");
    }

    fn answers(&self) -> usize {
        self.per_build.values().sum()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replaced_200_times_under_concurrent_calls() {
    let folder = Folder::new();
    let mut versions = std::collections::HashSet::new();
    let (reg, run) = reload_under_load(&folder, 200, 4, |i, reg, bytes| {
        let now = reg.get("versioned").unwrap();
        assert_eq!(
            *now.hash(),
            digest(bytes),
            "reload {i} serves the new build"
        );
        versions.insert(*now.hash());
    })
    .await;
    run.assert_clean();
    assert_eq!(versions.len(), 2);
    assert!(reg.failures().is_empty(), "{:?}", reg.failures());
    // Shadow copies are unlinked as soon as they are open: the folder does not grow.
    assert_eq!(folder.shadow_files(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_files_are_reported_and_the_rest_keep_serving() {
    let folder = Folder::new();
    let calc = library("calc");
    let bad: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "garbage.so",
            b"this is not a library at all".repeat(10),
            "not a shared library",
        ),
        (
            "truncated.so",
            calc[..calc.len() / 2].to_vec(),
            "incomplete",
        ),
        // Headers that still parse (no section table, which sits at the end): only the
        // segment-range check (the SIGBUS guard) refuses it.
        (
            "cut-segments.so",
            elf::cut_inside_segments(&calc),
            "the file is incomplete (a segment ends at byte",
        ),
        ("mismatch.so", library("abi-mismatch"), "ABI mismatch"),
        (
            "bad-init.so",
            library("bad-init"),
            "on_load panics on purpose",
        ),
        ("macros.so", proc_macro_library(), "not a toolhost plugin"),
    ];
    folder.put("calc.so", &calc);
    std::fs::write(folder.path("notes.txt"), "not a plugin file: ignored").unwrap();
    for (file, bytes, _) in &bad {
        folder.put(file, bytes);
    }

    // At start: each bad file is one failure naming its cause; calc serves.
    let reg = folder.open();
    let failures = reg.failures();
    assert_eq!(failures.len(), bad.len(), "{failures:?}");
    for (file, _, cause) in &bad {
        let (_, error) = failures
            .iter()
            .find(|(f, _)| *f == folder.path(file))
            .unwrap_or_else(|| panic!("no failure for {file}: {failures:?}"));
        assert!(error.contains(cause), "{file}: {error}");
        assert!(!error.contains('\n'), "{file}: one line: {error}");
    }
    let r = call(&reg, "calc", "multiply", json!({"x": 6, "y": 7})).await;
    assert_eq!(r.text(), "42");

    // While watching: the same files dropped in one by one each produce a Failed event.
    let (mut rx, _watch) = follow(&reg);
    let serving = reg.get("calc").unwrap();
    for (file, bytes, cause) in &bad {
        let path = folder.put(&format!("new-{file}"), bytes);
        let error = failed(&mut rx, &path).await;
        assert!(error.contains(cause), "{file}: {error}");
        let r = call(&reg, "calc", "add", json!({"x": 1, "y": 2})).await;
        assert_eq!(r.text(), "3");
    }
    // A file cut short that stays so is retried, then reported.
    let path = folder.path("new-truncated.so");
    assert!(reg
        .failures()
        .iter()
        .any(|(f, e)| *f == path && e.contains("incomplete")));

    // A failed reload of calc.so itself keeps the old version serving.
    let calc_path = folder.put("calc.so", &library("bad-init"));
    let error = failed(&mut rx, &calc_path).await;
    assert!(error.contains("panic"), "{error}");
    assert!(Arc::ptr_eq(&reg.get("calc").unwrap(), &serving));
    assert_eq!(
        call(&reg, "calc", "add", json!({"x": 2, "y": 2}))
            .await
            .text(),
        "4"
    );
    // Putting the serving build back is no reload, and clears the failure.
    folder.put("calc.so", &calc);
    common::eventually(WAIT, "calc.so no longer failing", || {
        !reg.failures().iter().any(|(f, _)| *f == calc_path)
    })
    .await;
    assert!(Arc::ptr_eq(&reg.get("calc").unwrap(), &serving));

    // A second file claiming the name `calc` is refused; the first keeps serving.
    let copy = folder.put("calc-copy.so", &calc);
    let error = failed(&mut rx, &copy).await;
    assert!(
        error.contains("`calc` is already taken by")
            && error.contains(&calc_path.display().to_string()),
        "{error}"
    );
    assert_eq!(reg.get("calc").unwrap().file(), calc_path);

    // Other files were never touched: nothing else was reported on the way.
    assert_eq!(reg.plugins().len(), 1);
    assert_eq!(folder.shadow_files(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plugins_appear_disappear_and_rename() {
    let (folder, reg, mut rx, _watch) = serve("calc.so", &library("calc"));

    // Added: written slowly, with a pause longer than the debounce in the middle; the
    // half-written file is retried, not reported, and the whole one is loaded.
    let faulty = library("faulty");
    let path = folder.path("faulty.so");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&path).unwrap();
        // Whatever the umask: the host refuses group-writable plugin files.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(std::fs::Permissions::from_mode(0o644))
                .unwrap();
        }
        f.write_all(&faulty[..faulty.len() / 3]).unwrap();
        f.flush().unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        f.write_all(&faulty[faulty.len() / 3..]).unwrap();
    }
    let e = wait_for(&mut rx, "faulty added", |e| {
        matches!(
            e,
            RegistryEvent::Added { .. } | RegistryEvent::Failed { .. }
        )
    })
    .await;
    assert_eq!(
        e,
        RegistryEvent::Added {
            name: "faulty".into(),
            file: path.clone()
        }
    );
    assert!(tool_names(&reg, "faulty").contains(&"slow".to_string()));
    let r = call(&reg, "faulty", "fail", json!({"message": "as asked"})).await;
    assert!(r.is_error && r.text() == "as asked");

    // Deleted: its tools are gone.
    std::fs::remove_file(&path).unwrap();
    let e = wait_for(&mut rx, "faulty removed", |e| {
        matches!(e, RegistryEvent::Removed { .. })
    })
    .await;
    assert_eq!(
        e,
        RegistryEvent::Removed {
            name: "faulty".into(),
            file: path.clone()
        }
    );
    assert!(reg.lease("faulty").await.is_none());
    assert!(tool_names(&reg, "faulty").is_empty());

    // A file whose plugin renames itself: the old name goes, the new one comes.
    let tools = folder.put("tools.so", &library("text"));
    added(&mut rx, "text").await;
    folder.put("tools.so", &library("faulty"));
    let gone = wait_for(&mut rx, "text removed", |e| {
        matches!(e, RegistryEvent::Removed { .. })
    })
    .await;
    assert_eq!(
        gone,
        RegistryEvent::Removed {
            name: "text".into(),
            file: tools.clone()
        }
    );
    added(&mut rx, "faulty").await;
    assert!(reg.get("text").is_none());
    assert_eq!(reg.get("faulty").unwrap().file(), tools);

    // A second claimant of `calc` waits for the name; deleting the first lets it serve.
    let calc_path = folder.path("calc.so");
    let second = folder.put("zz-calc.so", &variant(&library("calc"), 7));
    failed(&mut rx, &second).await;
    std::fs::remove_file(&calc_path).unwrap();
    removed(&mut rx, "calc").await;
    let e = wait_for(
        &mut rx,
        "calc added again",
        |e| matches!(e, RegistryEvent::Added { name, .. } if name == "calc"),
    )
    .await;
    assert_eq!(
        e,
        RegistryEvent::Added {
            name: "calc".into(),
            file: second.clone()
        }
    );
    assert_eq!(
        call(&reg, "calc", "add", json!({"x": 1, "y": 1}))
            .await
            .text(),
        "2"
    );
    assert!(reg.failures().is_empty(), "{:?}", reg.failures());

    // Moving the serving file to a new name keeps the plugin (and its slot).
    let moved = folder.path("calc-moved.so");
    std::fs::rename(&second, &moved).unwrap();
    let e = replaced(&mut rx, "calc").await;
    assert_eq!(
        e,
        RegistryEvent::Replaced {
            name: "calc".into(),
            file: moved.clone()
        }
    );
    assert_eq!(reg.get("calc").unwrap().file(), moved);

    // Rewriting identical bytes is not a reload.
    let before = reg.get("faulty").unwrap();
    folder.put("tools.so", &library("faulty"));
    std::fs::remove_file(&moved).unwrap();
    removed(&mut rx, "calc").await;
    assert!(Arc::ptr_eq(&before, &reg.get("faulty").unwrap()));
    assert_eq!(
        reg.plugins()
            .iter()
            .map(|p| p.name().to_string())
            .collect::<Vec<_>>(),
        ["faulty"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn notes_keep_their_state_across_reloads() {
    let notes = library("notes");
    let (folder, reg, mut rx, _watch) = serve("notes.so", &notes);
    assert!(reg.get("notes").unwrap().manifest().stateful);

    let first = structured(&call(&reg, "notes", "add_note", json!({"text": "first"})).await);
    let second = structured(&call(&reg, "notes", "add_note", json!({"text": "second"})).await);
    let r = call(&reg, "notes", "delete_note", json!({"id": first["id"]})).await;
    assert!(!r.is_error, "{}", r.text());

    folder.put("notes.so", &variant(&notes, 1));
    replaced(&mut rx, "notes").await;
    assert_eq!(
        *reg.get("notes").unwrap().hash(),
        digest(&variant(&notes, 1))
    );
    let list = structured(&call(&reg, "notes", "list_notes", json!({})).await);
    assert_eq!(
        list["notes"],
        json!([{"id": second["id"], "text": "second"}])
    );
    // Ids continue where the old version stopped.
    let third = structured(&call(&reg, "notes", "add_note", json!({"text": "third"})).await);
    assert_eq!(third["id"], json!(3));

    // Writers running through several reloads: every note they were told was stored is there.
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (reg, stop) = (reg.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let text = format!("writer {w} note {i}");
                let note =
                    structured(&call(&reg, "notes", "add_note", json!({"text": text})).await);
                assert_eq!(note["text"], json!(text));
                ids.push(note["id"].as_u64().unwrap());
            }
            ids
        }));
    }
    for n in 2..12 {
        folder.put("notes.so", &variant(&notes, n));
        replaced(&mut rx, "notes").await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut written = vec![second["id"].as_u64().unwrap(), 3];
    for w in writers {
        written.extend(w.await.unwrap());
    }
    written.sort();
    let stored = note_ids(&reg).await;
    let (w, s): (BTreeSet<u64>, BTreeSet<u64>) = (
        written.iter().copied().collect(),
        stored.iter().copied().collect(),
    );
    let lost: Vec<_> = w.difference(&s).collect();
    let invented: Vec<_> = s.difference(&w).collect();
    assert_eq!(w.len(), written.len(), "an id was handed out twice");
    assert!(
        lost.is_empty() && invented.is_empty(),
        "{} notes written, {} stored; lost: {lost:?}; invented: {invented:?}",
        written.len(),
        stored.len()
    );
    assert!(written.len() > 2);
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_old_version_is_unmapped_after_its_last_call() {
    use toolhost::plugin::still_mapped;

    let calc = library("calc");
    let (folder, reg, mut rx, _watch) = serve("calc.so", &calc);

    let lease = reg.lease("calc").await.unwrap();
    let old_shadow = lease.shadow_path().to_path_buf();
    let old = Arc::downgrade(lease.plugin());
    assert!(still_mapped(&old_shadow));

    folder.put("calc.so", &variant(&calc, 1));
    replaced(&mut rx, "calc").await;
    // The lease keeps the old version loaded and usable.
    assert!(still_mapped(&old_shadow));
    assert_eq!(*lease.hash(), digest(&calc));
    let lease = tokio::task::spawn_blocking(move || {
        let r = lease.call("add", r#"{"x": 20, "y": 22}"#, &CallControl::new("t", None));
        assert_eq!(r.text(), "42");
        lease
    })
    .await
    .unwrap();
    // Its last call is over: dropping the lease unloads and unmaps it.
    drop(lease);
    assert!(old.upgrade().is_none(), "the registry kept a stray Arc");
    assert!(!still_mapped(&old_shadow), "the old copy is still mapped");
    assert!(still_mapped(reg.get("calc").unwrap().shadow_path()));
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_plugin_that_pins_itself_is_reported_and_still_served() {
    use toolhost::plugin::{pinned_count, still_mapped};

    let sticky = library("sticky");
    // Loaded on this thread, whose thread-local destructor then lives in the library.
    let (folder, reg, mut rx, _watch) = serve("sticky.so", &sticky);
    let r = call(&reg, "sticky", "touch", json!({})).await;
    assert!(!r.is_error, "{}", r.text());
    let old_shadow = reg.get("sticky").unwrap().shadow_path().to_path_buf();

    let before = pinned_count();
    folder.put("sticky.so", &variant(&sticky, 1));
    replaced(&mut rx, "sticky").await;
    // The old version was released at the swap; the system kept it mapped.
    assert!(pinned_count() > before, "pinning was not detected");
    assert!(still_mapped(&old_shadow));
    let r = call(&reg, "sticky", "touch", json!({})).await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(
        *reg.get("sticky").unwrap().hash(),
        digest(&variant(&sticky, 1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_call_in_flight_finishes_on_the_old_version() {
    let faulty = library("faulty");
    let (folder, reg, mut rx, _watch) = serve("faulty.so", &faulty);

    let marker = folder.shadow.path().join("slow-finished");
    let old = reg.lease("faulty").await.unwrap();
    let old_hash = *old.hash();
    let args = json!({"ms": 10_000, "marker": marker}).to_string();
    let slow = tokio::task::spawn_blocking(move || {
        let r = old.call("slow", &args, &CallControl::new("slow", None));
        (r, *old.hash())
    });

    let new_bytes = variant(&faulty, 1);
    folder.put("faulty.so", &new_bytes);
    replaced(&mut rx, "faulty").await;
    let new = reg.lease("faulty").await.unwrap();
    assert_eq!(*new.hash(), digest(&new_bytes));
    assert_ne!(*new.hash(), old_hash);
    let r = call(&reg, "faulty", "echo", json!({"value": {"k": "v"}})).await;
    assert_eq!(structured(&r), json!({"value": {"k": "v"}}));
    // The new version answered while the slow call still runs on the old one.
    assert!(
        !marker.exists(),
        "the slow call ended before the new version served"
    );

    let (r, hash) = slow.await.unwrap();
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "slept 10000 ms");
    assert_eq!(hash, old_hash);
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "finished");
}

fn items(r: &CallResult) -> Vec<String> {
    serde_json::from_value(structured(r)["items"].clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stateful_swap_waits_for_the_writes_in_flight() {
    let lib = library("slow-state");
    let (folder, reg, mut rx, _watch) = serve("state.so", &lib);

    // A slow write holds the old version.
    let old = reg.lease("slow-state").await.unwrap();
    let written = Arc::new(AtomicBool::new(false));
    let slow = {
        let written = written.clone();
        tokio::task::spawn_blocking(move || {
            let r = old.call(
                "append",
                r#"{"item": "slow", "delay_ms": 1500}"#,
                &CallControl::new("slow", None),
            );
            written.store(true, Ordering::SeqCst);
            // The lease (and with it the gate) is released only after the write.
            drop(old);
            r
        })
    };
    let new_bytes = variant(&lib, 1);
    folder.put("state.so", &new_bytes);
    // Fast writes issued during the reload: each lands on one version or the other, and none
    // is lost in the hand-off.
    let fast = {
        let reg = reg.clone();
        tokio::spawn(async move {
            for i in 0..20 {
                let item = format!("fast {i}");
                let r = call(&reg, "slow-state", "append", json!({"item": item})).await;
                assert!(!r.is_error, "{}", r.text());
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    replaced(&mut rx, "slow-state").await;
    assert!(
        written.load(Ordering::SeqCst),
        "the new version took over before the write in flight on the old one finished"
    );
    assert_eq!(*reg.get("slow-state").unwrap().hash(), digest(&new_bytes));
    let r = slow.await.unwrap();
    assert!(!r.is_error, "{}", r.text());
    fast.await.unwrap();
    let list = items(&call(&reg, "slow-state", "items", json!({})).await);
    assert!(list.contains(&"slow".to_string()), "{list:?}");
    for i in 0..20 {
        assert!(
            list.contains(&format!("fast {i}")),
            "fast {i} lost: {list:?}"
        );
    }
    assert_eq!(list.len(), 21);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stuck_call_delays_a_stateful_swap_which_is_retried() {
    let folder = Folder::new();
    let lib = library("slow-state");
    let path = folder.put("state.so", &lib);
    let mut config = folder.quick_config();
    config.handoff_timeout = Duration::from_millis(300);
    let reg = Registry::open(config).unwrap();
    let (mut rx, _watch) = follow(&reg);

    let old = reg.lease("slow-state").await.unwrap();
    let old_hash = *old.hash();
    let slow = tokio::task::spawn_blocking(move || {
        old.call(
            "append",
            r#"{"item": "slow", "delay_ms": 4000}"#,
            &CallControl::new("slow", None),
        )
    });
    let new_bytes = variant(&lib, 1);
    folder.put("state.so", &new_bytes);
    // The hand-off gives up for now: reported, and the old version keeps serving.
    let error = failed(&mut rx, &path).await;
    assert!(error.contains("did not finish within"), "{error}");
    assert_eq!(*reg.get("slow-state").unwrap().hash(), old_hash);
    // Once the call is over, a retry hands the state over.
    assert!(!slow.await.unwrap().is_error);
    replaced(&mut rx, "slow-state").await;
    assert_eq!(*reg.get("slow-state").unwrap().hash(), digest(&new_bytes));
    let list = items(&call(&reg, "slow-state", "items", json!({})).await);
    assert_eq!(list, ["slow"]);
    assert!(reg.failures().is_empty(), "{:?}", reg.failures());
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn untrusted_files_are_refused() {
    use std::os::unix::fs::PermissionsExt;

    let (f, [calc, text]) = folder_with(["calc", "text"]);
    std::fs::set_permissions(&text, std::fs::Permissions::from_mode(0o666)).unwrap();
    let reg = f.open();
    assert_eq!(reg.plugins().len(), 1, "only calc serves");
    let failures = reg.failures();
    assert_eq!(failures.len(), 1);
    assert!(
        failures[0].1.starts_with("refused: ") && failures[0].1.contains("writable by everyone"),
        "{failures:?}"
    );

    // A lock file naming only calc's build: text stays out even once its mode is fixed.
    std::fs::set_permissions(&text, std::fs::Permissions::from_mode(0o644)).unwrap();
    let reg = f.open_locked(&f.write_lock(&[&calc]));
    let names: Vec<String> = reg.plugins().iter().map(|p| p.name().to_string()).collect();
    assert_eq!(names, ["calc"]);
    assert!(reg.failures()[0].1.contains("is not in the lock file"));

    // A plugin folder others can write is refused as a whole.
    std::fs::set_permissions(f.dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = Registry::open(f.quick_config())
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("writable by everyone"), "{e}");
}

/// Issue #14 item 9: the plugin folder deleted and created again is followed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_folder_deleted_and_recreated_is_watched_again() {
    let (folder, _reg, mut rx, _watch) = serve("calc.so", &library("calc"));
    std::fs::remove_dir_all(folder.dir.path()).unwrap();
    removed(&mut rx, "calc").await;
    std::fs::create_dir(folder.dir.path()).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(folder.dir.path(), mode).unwrap();
    }
    folder.put("text.so", &library("text"));
    added(&mut rx, "text").await;
    // And the new folder is really watched: a later change is seen.
    folder.put("calc.so", &library("calc"));
    added(&mut rx, "calc").await;
}

/// Issue #14 item 8: a FIFO named like a plugin does not block the watcher.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fifo_named_like_a_plugin_does_not_block_the_watcher() {
    let (folder, _reg, mut rx, _watch) = serve("calc.so", &library("calc"));
    let fifo = folder.path("fifo.so");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let error = failed(&mut rx, &fifo).await;
    assert!(
        error.contains("not a regular file (it is a FIFO)"),
        "{error}"
    );
    folder.put("text.so", &library("text"));
    added(&mut rx, "text").await;
}

/// Issue #14 item 5: the lock file is read again when it changes, while the host runs.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lock_file_changes_apply_while_running() {
    let (f, [calc, text]) = folder_with(["calc", "text"]);
    let reg = f.open_locked(&f.write_lock(&[&calc]));
    assert!(reg.get("text").is_none());
    let (mut rx, _watch) = follow(&reg);
    // Added to the lock file: text loads, without touching its file.
    f.write_lock(&[&calc, &text]);
    added(&mut rx, "text").await;
    // Removed from it: calc stops serving.
    f.write_lock(&[&text]);
    let error = failed(&mut rx, &calc).await;
    assert!(error.contains("is not in the lock file"), "{error}");
    assert!(reg.get("calc").is_none());
    assert!(reg.get("text").is_some());
}

/// The reliability soak: 1000 reloads while 16 clients call continuously. Every call must come
/// back with the right answer from the build it leased, no version may stay mapped, no shadow
/// copy may be left behind, and resident memory may not grow by more than 128 MiB (a leaked
/// copy of the debug build per reload would be gigabytes; the figure is printed).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn soak_1000_reloads_with_16_clients() {
    let folder = Folder::new();
    // Warm up (first loads, thread pools, allocator arenas) before taking the baseline.
    let _ = reload_under_load(&folder, 20, 16, |_, _, _| {}).await;
    let rss_start = rss_kib();
    let (reg, run) = reload_under_load(&folder, 1000, 16, |_, _, _| {}).await;
    let rss_end = rss_kib();
    eprintln!(
        "soak: {} calls across 1000 reloads ({:?}); VmRSS {rss_start:?} KiB -> {rss_end:?} KiB",
        run.answers(),
        run.per_build
    );
    run.assert_clean();
    assert!(reg.failures().is_empty(), "{:?}", reg.failures());
    assert_eq!(folder.shadow_files(), 0);
    if let (Some(a), Some(b)) = (rss_start, rss_end) {
        assert!(
            b.saturating_sub(a) < 128 * 1024,
            "resident memory grew by {} KiB",
            b - a
        );
    }
}
