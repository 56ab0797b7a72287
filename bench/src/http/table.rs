//! The comparison's table: per candidate the median of its runs, with their range.

use crate::{Candidate, Cli, Kind, Report};

/// Median, smallest and largest.
pub fn median(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

pub fn thousands(x: f64) -> String {
    let s = format!("{x:.0}");
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A cell: the median of `v` shown by `show`, with the range when there are several runs.
pub fn cell(v: &mut [f64], show: &dyn Fn(f64) -> String, unit: &str) -> String {
    let (m, lo, hi) = median(v);
    if v.len() > 1 {
        format!("{}{unit} ({}–{})", show(m), show(lo), show(hi))
    } else {
        format!("{}{unit}", show(m))
    }
}

/// The median sequential p50 of each candidate's runs, and the floor's (the ratios'
/// denominator), if a floor ran.
pub fn p50s<C, R>(
    candidates: &[C],
    runs: &[Vec<R>],
    is_floor: impl Fn(&C) -> bool,
    p50: impl Fn(&R) -> f64,
) -> (Vec<f64>, Option<f64>) {
    let each: Vec<f64> = runs
        .iter()
        .map(|r| median(&mut r.iter().map(&p50).collect::<Vec<_>>()).0)
        .collect();
    let floor = candidates
        .iter()
        .zip(&each)
        .find(|(c, _)| is_floor(c))
        .map(|(_, p)| *p);
    (each, floor)
}

pub fn print_table(cli: &Cli, candidates: &[Candidate], runs: &[Vec<Report>]) {
    println!(
        "tools/call of `add` over Streamable HTTP (and stdio): {} sequential calls on one \
         keep-alive connection, then {} over {} connections at once (stdio: {} in flight on its \
         pipes); medians of {} runs (range); every answer checked.",
        cli.n, cli.n, cli.concurrency, cli.concurrency, cli.runs
    );
    println!();
    println!("| candidate | seq p50 | ×floor | seq calls/s | concurrent calls/s | concurrent p50 | concurrent p99 | RSS after |");
    println!("|---|--:|--:|--:|--:|--:|--:|--:|");
    let (p50, floor) = p50s(
        candidates,
        runs,
        |c| c.kind == Kind::Floor,
        |r| r.seq.p50_us,
    );
    let one = |x: f64| format!("{x:.1}");
    for ((c, r), p) in candidates.iter().zip(runs).zip(&p50) {
        let col = |f: &dyn Fn(&Report) -> f64| r.iter().map(f).collect::<Vec<f64>>();
        let ratio = floor.map_or("–".to_string(), |f| format!("{:.2}x", p / f));
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            cell(&mut col(&|r| r.seq.p50_us), &one, " µs"),
            ratio,
            cell(&mut col(&|r| r.seq.calls_per_s), &thousands, ""),
            cell(&mut col(&|r| r.conc.calls_per_s), &thousands, ""),
            cell(&mut col(&|r| r.conc.p50_us), &one, " µs"),
            cell(&mut col(&|r| r.conc.p99_us), &one, " µs"),
            cell(
                &mut col(&|r| r.memory.rss_kib as f64 / 1024.0),
                &one,
                " MiB"
            ),
        );
    }
}
