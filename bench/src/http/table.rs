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
    let p50 = |r: &[Report]| median(&mut r.iter().map(|r| r.seq.p50_us).collect::<Vec<_>>()).0;
    let floor = candidates
        .iter()
        .zip(runs)
        .find(|(c, _)| c.kind == Kind::Floor)
        .map(|(_, r)| p50(r));
    let cell = |v: &mut Vec<f64>, show: &dyn Fn(f64) -> String, unit: &str| {
        let (m, lo, hi) = median(v);
        if v.len() > 1 {
            format!("{}{unit} ({}–{})", show(m), show(lo), show(hi))
        } else {
            format!("{}{unit}", show(m))
        }
    };
    let one = |x: f64| format!("{x:.1}");
    for (c, r) in candidates.iter().zip(runs) {
        let col = |f: &dyn Fn(&Report) -> f64| r.iter().map(f).collect::<Vec<f64>>();
        let ratio = floor.map_or("–".to_string(), |f| format!("{:.2}x", p50(r) / f));
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
