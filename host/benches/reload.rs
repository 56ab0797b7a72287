//! Hot reload measurements: resident memory over 1000 reloads, and the time from a new build
//! landing in the folder (atomic rename) to it serving.
//!
//! `cargo bench -p toolhost --bench reload` (builds the `calc` plugin in release mode first).
//! Options: `--reloads N` (default 1000), `--samples N` (default 100).

mod common;

use common::arg;
use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use tokio::sync::broadcast::{error::TryRecvError, Receiver};
use toolhost::{
    plugin::{pinned_count, CallControl},
    registry::{Registry, RegistryConfig, RegistryEvent, LIBRARY_SUFFIX},
};

/// Resident memory of this process in KiB (`VmRSS`), Linux only.
fn rss_kib() -> Option<u64> {
    toolhost_test_support::proc_status("self", "VmRSS")
}

fn show_rss(kib: Option<u64>) -> String {
    kib.map_or("n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}

/// Writes `bytes` beside the destination, then renames it over. Returns the instant just before
/// the rename: on a busy machine this thread may be descheduled right after the rename, and
/// the watcher may have loaded the file before we would read the clock again.
fn put(dir: &Path, bytes: &[u8]) -> Instant {
    let tmp = dir.join(".calc.so.tmp");
    std::fs::write(&tmp, bytes).unwrap();
    let complete = Instant::now();
    std::fs::rename(&tmp, dir.join(format!("calc.{LIBRARY_SUFFIX}"))).unwrap();
    complete
}

fn wait_replaced(rx: &mut Receiver<RegistryEvent>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match rx.try_recv() {
            Ok(RegistryEvent::Replaced { .. }) => return,
            Ok(RegistryEvent::Failed { file, error }) => {
                panic!("{}: {error}", file.display())
            }
            Ok(_) | Err(TryRecvError::Lagged(_)) => {}
            Err(TryRecvError::Empty) => {
                assert!(Instant::now() < deadline, "no reload within 30 s");
                // Short sleeps: the wake-up delay is part of what is measured.
                std::thread::sleep(Duration::from_micros(200));
            }
            Err(TryRecvError::Closed) => panic!("event stream closed"),
        }
    }
}

fn main() {
    let reloads = arg("--reloads", 1000);
    let samples = arg("--samples", 100);
    let calc = {
        let lib = common::calc_release();
        std::fs::read(&lib).unwrap_or_else(|e| panic!("{}: {e}", lib.display()))
    };
    // Two builds with different bytes (and hashes); the appended bytes are ignored by the loader.
    let builds: Vec<Vec<u8>> = (0..2)
        .map(|i| {
            let mut b = calc.clone();
            b.extend_from_slice(format!("bench-variant-{i}").as_bytes());
            b
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let shadow: PathBuf = dir.path().join("shadow");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    put(&plugins, &builds[0]);

    let mut config = RegistryConfig::new(&plugins);
    config.shadow_dir = shadow.clone();
    // `--isolate`: calc runs in a worker process; a reload starts a new worker.
    let isolate = std::env::args().any(|a| a == "--isolate");
    if isolate {
        let mut workers =
            toolhost::worker::WorkerConfig::new(env!("CARGO_BIN_EXE_toolhost-worker"));
        workers.isolate_all = true;
        config.workers = Some(std::sync::Arc::new(workers));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let reg = Registry::open(config.clone()).unwrap();
    let mut rx = reg.subscribe();
    let _watch = reg.watch().unwrap();
    let call = |reg: &Registry| {
        let lease = rt.block_on(reg.lease("calc")).expect("calc serves");
        let r = lease.call(
            "add",
            r#"{"x": 1, "y": 2}"#,
            &CallControl::new("bench", None),
        );
        assert_eq!(r.text(), "3");
    };
    call(&reg);
    let rss_first = rss_kib();
    println!(
        "calc: {} bytes; debounce {:?}, stable wait {:?}",
        calc.len(),
        config.debounce,
        config.stable_wait
    );
    println!(
        "resident memory after the first load: {}",
        show_rss(rss_first)
    );

    for i in 0..reloads {
        put(&plugins, &builds[(i + 1) % 2]);
        wait_replaced(&mut rx);
        call(&reg);
        if (i + 1) % 100 == 0 {
            println!("  after {:4} reloads: {}", i + 1, show_rss(rss_kib()));
        }
    }
    let rss_after = rss_kib();
    if let Some(pid) = reg.get("calc").and_then(|p| p.worker_pid()) {
        // The process started is the worker's keeper; the plugin runs in its child.
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"));
        let worker = children
            .ok()
            .and_then(|c| c.split_whitespace().next()?.parse::<u32>().ok());
        let rss = |pid: u32| {
            toolhost_test_support::proc_status(pid, "VmRSS")
                .map_or("n/a".into(), |k| format!("{k} kB"))
        };
        println!(
            "the idle worker serving calc: {} (its keeper: {})",
            worker.map_or("n/a".into(), rss),
            rss(pid)
        );
    }
    println!(
        "resident memory after {reloads} reloads: {} (growth {})",
        show_rss(rss_after),
        match (rss_first, rss_after) {
            (Some(a), Some(b)) => format!("{:+.1} MiB", (b as f64 - a as f64) / 1024.0),
            _ => "n/a".into(),
        }
    );
    let shadow_files = std::fs::read_dir(&shadow).map(|d| d.count()).unwrap_or(0);
    println!(
        "pinned libraries: {}, files left in the shadow folder: {shadow_files}",
        pinned_count()
    );

    let mut latencies = Vec::with_capacity(samples);
    for i in 0..samples {
        // Settle, so each sample starts from an idle watcher.
        std::thread::sleep(Duration::from_millis(20));
        loop {
            match rx.try_recv() {
                Ok(e) => eprintln!("stray event before sample {i}: {e:?}"),
                Err(TryRecvError::Empty) => break,
                Err(e) => panic!("{e:?}"),
            }
        }
        let written = put(&plugins, &builds[(reloads + i + 1) % 2]);
        wait_replaced(&mut rx);
        latencies.push(written.elapsed());
        call(&reg);
    }
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "rename to serving, {samples} reloads: median {:.1} ms, worst {:.1} ms, best {:.1} ms",
        ms(latencies[samples / 2]),
        ms(latencies[samples - 1]),
        ms(latencies[0])
    );
}
