//! The table: per candidate the median of its runs with their range, and ratios to the floor.

use crate::{
    candidates::Candidate,
    client::{ReadVsCall, Report},
    Cli,
};

/// Median, smallest and largest of one figure over the runs.
#[derive(Clone, Copy)]
struct Spread {
    median: f64,
    min: f64,
    max: f64,
}

fn spread(runs: &[Report], f: impl Fn(&Report) -> f64) -> Spread {
    let mut v: Vec<f64> = runs.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    Spread {
        median: v[v.len() / 2],
        min: v[0],
        max: v[v.len() - 1],
    }
}

/// `12,345`
fn thousands(x: f64) -> String {
    let s = format!("{:.0}", x);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `12.3 µs (11.9–13.0)`: the median with its unit, then the range of the runs.
fn cell(s: Spread, show: impl Fn(f64) -> String, unit: &str, runs: usize) -> String {
    if runs > 1 {
        format!("{}{unit} ({}–{})", show(s.median), show(s.min), show(s.max))
    } else {
        format!("{}{unit}", show(s.median))
    }
}

pub fn print(cli: &Cli, candidates: &[Candidate], runs: &[Vec<Report>], slow: Option<&Report>) {
    let checked: usize = runs
        .first()
        .and_then(|r| r.first())
        .map_or(0, |r| r.checked);
    println!(
        "tools/call round trip of `add`: {} sequential calls, then {} with {} in flight; \
         medians of {} runs (range); {} answers checked per run, 0 wrong.",
        cli.n, cli.n, cli.concurrency, cli.runs, checked
    );
    println!();
    println!(
        "| candidate | seq p50 | ×floor | seq calls/s | ×floor | concurrent calls/s | ×floor | handshake |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|");
    let one = |x: f64| format!("{x:.1}");
    let floor = &runs[0];
    let f_p50 = spread(floor, |r| r.seq.p50_us).median;
    let f_seq = spread(floor, |r| r.seq.calls_per_s).median;
    let f_conc = spread(floor, |r| r.conc.calls_per_s).median;
    for (c, r) in candidates.iter().zip(runs) {
        let p50 = spread(r, |r| r.seq.p50_us);
        let seq = spread(r, |r| r.seq.calls_per_s);
        let conc = spread(r, |r| r.conc.calls_per_s);
        let hs = spread(r, |r| r.handshake_ms);
        println!(
            "| {} | {} | {:.2}x | {} | {:.2}x | {} | {:.2}x | {} |",
            c.name,
            cell(p50, one, " µs", r.len()),
            p50.median / f_p50,
            cell(seq, thousands, "", r.len()),
            seq.median / f_seq,
            cell(conc, thousands, "", r.len()),
            conc.median / f_conc,
            cell(hs, one, " ms", r.len()),
        );
    }
    println!();
    println!("p99 (median of runs), sequential / concurrent:");
    for (c, r) in candidates.iter().zip(runs) {
        println!(
            "- {}: {:.1} µs / {:.1} µs",
            c.name,
            spread(r, |r| r.seq.p99_us).median,
            spread(r, |r| r.conc.p99_us).median
        );
    }
    if let Some(c) = slow.and_then(|s| s.slow_effective_concurrency) {
        println!(
            "toolhost, a 20 ms tool (faulty.slow) with {} in flight: effective concurrency {c:.1} of {}",
            cli.concurrency, cli.concurrency
        );
    }
}

/// The read row: per toolhost candidate, a `resources/read` round trip against a `tools/call`
/// answering the same text, sequential, in the same run.
pub fn print_reads(cli: &Cli, reads: &[(String, ReadVsCall)]) {
    if reads.is_empty() {
        return;
    }
    println!();
    println!(
        "resources/read round trip against a tools/call of the same size (faulty's \
         faulty://text/{} resource against its large tool answering {} characters: a {}-byte \
         result each): {} sequential of each, 5 alternating batches, medians.",
        reads[0].1.chars, reads[0].1.call_chars, reads[0].1.result_bytes, cli.n
    );
    println!();
    println!("| candidate | read p50 | call p50 | read/call | read/s | call/s |");
    println!("|---|--:|--:|--:|--:|--:|");
    for (name, r) in reads {
        println!(
            "| {name} | {:.1} µs | {:.1} µs | {:.2}x | {} | {} |",
            r.read.p50_us,
            r.call.p50_us,
            r.read.p50_us / r.call.p50_us,
            thousands(r.read.calls_per_s),
            thousands(r.call.calls_per_s),
        );
    }
}

/// `--hooks`: the PreToolUse callback round trip per candidate, against the floor.
pub fn print_hooks(cli: &Cli, candidates: &[Candidate], runs: &[Vec<Report>]) {
    let hook = |r: &Report| r.hook.unwrap_or_default();
    println!(
        "PreToolUse hook_callback round trip (Bash; every other command refused): {} one at a \
         time; medians of {} runs (range).",
        cli.n, cli.runs
    );
    println!();
    println!("| candidate | p50 | ×floor | p99 | callbacks/s | ×floor |");
    println!("|---|--:|--:|--:|--:|--:|");
    let one = |x: f64| format!("{x:.1}");
    let f_p50 = spread(&runs[0], |r| hook(r).p50_us).median;
    let f_rate = spread(&runs[0], |r| hook(r).calls_per_s).median;
    for (c, r) in candidates.iter().zip(runs) {
        let p50 = spread(r, |r| hook(r).p50_us);
        let p99 = spread(r, |r| hook(r).p99_us);
        let rate = spread(r, |r| hook(r).calls_per_s);
        println!(
            "| {} | {} | {:.2}x | {} | {} | {:.2}x |",
            c.name,
            cell(p50, one, " µs", r.len()),
            p50.median / f_p50,
            cell(p99, one, " µs", r.len()),
            cell(rate, thousands, "", r.len()),
            rate.median / f_rate,
        );
    }
}
