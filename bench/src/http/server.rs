//! The servers under test: started fresh for each run, killed when dropped.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};

/// Longest a server may take to start answering.
const START_LIMIT: Duration = Duration::from_secs(30);

pub struct Server {
    child: Child,
    /// Where it listens, for an HTTP server.
    pub addr: Option<SocketAddr>,
    /// Its stderr, for the message when it fails.
    log: Option<PathBuf>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(log) = &self.log {
            let _ = std::fs::remove_file(log);
        }
    }
}

/// Resident and peak resident memory of a process, in KiB (`/proc/PID/status`).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Memory {
    pub rss_kib: u64,
    pub peak_kib: u64,
}

impl Server {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn memory(&self) -> Result<Memory> {
        memory_of(self.pid())
    }

    /// The memory of the server's descendants, summed (an `--isolate`d plugin's worker and
    /// its keeper; zero for a server that starts none): what isolation costs besides the
    /// host's own.
    pub fn descendants_memory(&self) -> Result<(Memory, usize)> {
        let (mut sum, mut count) = (Memory::default(), 0);
        let mut pending = children_of(self.pid());
        while let Some(pid) = pending.pop() {
            // A process that ended between the listing and this read counts nothing.
            if let Ok(m) = memory_of(pid) {
                sum.rss_kib += m.rss_kib;
                sum.peak_kib += m.peak_kib;
                count += 1;
            }
            pending.extend(children_of(pid));
        }
        Ok((sum, count))
    }

    pub fn take_pipes(&mut self) -> Result<(std::process::ChildStdin, std::process::ChildStdout)> {
        Ok((
            self.child.stdin.take().context("no stdin")?,
            self.child.stdout.take().context("no stdout")?,
        ))
    }

    /// The server's stderr so far (its last lines), for an error message.
    pub fn log_tail(&self) -> String {
        let Some(log) = &self.log else {
            return String::new();
        };
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(10)..].join("\n")
    }
}

/// Resident and peak memory of process `pid` (`/proc/PID/status`).
fn memory_of(pid: u32) -> Result<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    Ok(Memory {
        rss_kib: field("VmRSS:"),
        peak_kib: field("VmHWM:"),
    })
}

/// The child processes of `pid`, whichever of its threads started them
/// (`/proc/PID/task/TID/children`).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

fn log_file(tag: &str) -> Result<(PathBuf, std::fs::File)> {
    let path = std::env::temp_dir().join(format!(
        "toolhost-bench-http-{}-{tag}.log",
        std::process::id()
    ));
    let file = std::fs::File::create(&path)?;
    Ok((path, file))
}

/// Where the host says it serves: its `toolhost: serving http://ADDR/mcp` line on stderr.
fn announced_addr(log: &Path) -> Option<SocketAddr> {
    std::fs::read_to_string(log).ok()?.lines().find_map(|l| {
        l.strip_prefix("toolhost: serving http://")?
            .strip_suffix("/mcp")?
            .parse()
            .ok()
    })
}

/// `toolhost serve --http 127.0.0.1:0 --plugins DIR [extra...]` (the kernel picks the port,
/// the host names it), ready once `/healthz` answers 200.
pub fn toolhost_http(toolhost: &Path, plugins: &Path, extra: &[String]) -> Result<Server> {
    let (log, file) = log_file("toolhost")?;
    let child = Command::new(toolhost)
        .args(["serve", "--http", "127.0.0.1:0", "--plugins"])
        .arg(plugins)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .with_context(|| format!("cannot run {}", toolhost.display()))?;
    let mut server = Server {
        child,
        addr: None,
        log: Some(log.clone()),
    };
    let deadline = Instant::now() + START_LIMIT;
    loop {
        if server.addr.is_none() {
            server.addr = announced_addr(&log);
        }
        if server.addr.is_some_and(healthy) {
            break;
        }
        if let Some(status) = server.child.try_wait()? {
            bail!("toolhost exited ({status}): {}", server.log_tail());
        }
        if Instant::now() > deadline {
            bail!(
                "toolhost not ready within {}s: {}",
                START_LIMIT.as_secs(),
                server.log_tail()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(server)
}

fn healthy(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let mut head = [0u8; 12];
    s.write_all(req.as_bytes()).is_ok() && s.read_exact(&mut head).is_ok() && &head[9..12] == b"200"
}

/// `toolhost serve --plugins DIR` on pipes.
pub fn toolhost_stdio(toolhost: &Path, plugins: &Path) -> Result<Server> {
    let mut args = vec![std::ffi::OsStr::new("serve"), "--plugins".as_ref()];
    args.push(plugins.as_os_str());
    stdio(toolhost, &args)
}

/// `program args...` on pipes, its stderr kept for the message when it fails.
pub fn stdio(program: &Path, args: &[&std::ffi::OsStr]) -> Result<Server> {
    let (log, file) = log_file("stdio")?;
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(file)
        .spawn()
        .with_context(|| format!("cannot run {}", program.display()))?;
    Ok(Server {
        child,
        addr: None,
        log: Some(log),
    })
}

/// The voluntary context switches of process `pid`: of every thread of it and of its
/// children's (an isolated plugin's worker), so far. Threads that ended are not counted.
pub fn voluntary_switches(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    let mut total = 0;
    for task in tasks.flatten() {
        let dir = task.path();
        let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
        total += status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let children = std::fs::read_to_string(dir.join("children")).unwrap_or_default();
        for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
            total += voluntary_switches(child);
        }
    }
    total
}

/// The rmcp peer (bench/peers/rmcp).
pub fn rmcp(peer: &Path, sessions: bool) -> Result<Server> {
    let mut args = vec!["127.0.0.1:0"];
    if sessions {
        args.push("--sessions");
    }
    announced(peer, &args)
}

/// A server that prints `listening on http://ADDR/mcp` once bound (the rmcp peer, the
/// floor), ready then.
pub fn announced(program: &Path, args: &[&str]) -> Result<Server> {
    let peer = program;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot run {}", peer.display()))?;
    // It prints one line once bound; a peer that never does is killed by the bound wait of
    // the read's thread below.
    let stdout = child.stdout.take().context("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let mut server = Server {
        child,
        addr: None,
        log: None,
    };
    let line = rx
        .recv_timeout(START_LIMIT)
        .with_context(|| format!("{} did not say where it listens", peer.display()))?;
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|a| a.strip_suffix("/mcp"))
        .with_context(|| format!("unexpected line from {}: {line:?}", peer.display()))?;
    server.addr = Some(addr.parse()?);
    Ok(server)
}
