//! `toolhost serve`: every plugin as MCP servers over stdin/stdout or HTTP, following the
//! folder until the input ends or a signal comes.

use std::{net::SocketAddr, path::Path, process::ExitCode, time::Duration};

use anyhow::Context as _;

use super::{runtime, Plugins};
use crate::{
    handler::{Router, RouterConfig, TaskLimits},
    service::{
        http::{HttpLimits, TlsFiles},
        SessionLimits,
    },
    transport::{blocking_lines, Writer},
};

/// The settings of `serve --http`.
pub struct HttpServe<'a> {
    pub addr: SocketAddr,
    pub token_file: Option<&'a Path>,
    pub allow_origins: Vec<String>,
    pub tls: Option<TlsFiles>,
    pub limits: HttpLimits,
    /// Token, certificate and key files other users can write are accepted.
    pub allow_shared: bool,
    /// The key of 2026-07-28 `requestState`s (`--state-key-file`), else random per process.
    pub state_key_file: Option<&'a Path>,
}

/// The router's configuration: `limits`' and the tasks kept (`tasks`).
fn router_config(limits: &SessionLimits, tasks: TaskLimits) -> RouterConfig {
    RouterConfig {
        tasks,
        ..limits.call.router_config()
    }
}

/// Over stdin/stdout.
pub fn serve(
    opts: &Plugins<'_>,
    limits: &SessionLimits,
    tasks: TaskLimits,
) -> anyhow::Result<ExitCode> {
    let rt = runtime()?;
    rt.block_on(async {
        let registry = opts.open()?;
        let events = registry.subscribe();
        let _watch = registry.watch().context("cannot watch the plugin folder")?;
        let router = Router::new(registry, router_config(limits, tasks));
        let lines = blocking_lines(stdio(0)?).max_line_bytes(limits.max_line_bytes);
        let out = stdout_writer()?;
        keep_stdout_for_the_protocol()?;
        crate::service::serve::serve_with(lines, out, router, Some(events)).await;
        anyhow::Ok(())
    })?;
    rt.shutdown_timeout(Duration::from_millis(100));
    Ok(ExitCode::SUCCESS)
}

/// A duplicate of stdin's (0) or stdout's (1) descriptor, for the reading threads or the
/// writer to own.
fn stdio(fd: i32) -> anyhow::Result<std::os::fd::OwnedFd> {
    use std::os::fd::AsFd;
    let duplicate = match fd {
        0 => std::io::stdin().as_fd().try_clone_to_owned(),
        _ => std::io::stdout().as_fd().try_clone_to_owned(),
    };
    duplicate.with_context(|| format!("cannot duplicate descriptor {fd}"))
}

/// The writer of stdout: a pipe (what an MCP client gives) is written directly by the thread
/// that answered, in non-blocking mode; anything else (a terminal, a file) through tokio's
/// stdout.
fn stdout_writer() -> anyhow::Result<(crate::transport::LineSender, Writer)> {
    use tokio::net::unix::pipe;
    match pipe::Sender::from_file(std::fs::File::from(stdio(1)?)) {
        Ok(pipe) => Ok(Writer::spawn_direct(pipe)),
        Err(_) => Ok(Writer::spawn(tokio::fs::File::from_std(
            std::fs::File::from(stdio(1)?),
        ))),
    }
}

/// Points descriptor 1 at stderr once the writer holds its own duplicate of stdout: what an
/// in-process plugin prints (a stray `println!`) goes to the log, not into the protocol stream.
fn keep_stdout_for_the_protocol() -> anyhow::Result<()> {
    // SAFETY: dup2 replaces descriptor 1 with a duplicate of 2, both open for the whole
    // process; it reads and writes no memory of ours. Rust's `Stdout` keeps using fd 1, which
    // is exactly the redirection wanted.
    if unsafe { libc::dup2(2, 1) } < 0 {
        return Err(std::io::Error::last_os_error())
            .context("cannot point standard output at standard error");
    }
    Ok(())
}

/// Over HTTP (`--http`).
pub fn serve_http(
    opts: &Plugins<'_>,
    limits: &SessionLimits,
    tasks: TaskLimits,
    http: HttpServe<'_>,
) -> anyhow::Result<ExitCode> {
    use crate::service::http::{tls_acceptor, HttpOptions, HttpServer, StateKey, Tokens};
    raise_descriptor_limit();
    let addr = http.addr;
    let tokens = match http.token_file {
        Some(path) => Some(Tokens::load(path, http.allow_shared)?),
        None => None,
    };
    let tls = match &http.tls {
        Some(files) => Some(tls_acceptor(files, http.allow_shared)?),
        None => None,
    };
    let state_key = match http.state_key_file {
        Some(path) => Some(StateKey::load(path, http.allow_shared)?),
        None => None,
    };
    let rt = super::http_runtime()?;
    rt.block_on(async {
        let options = HttpOptions {
            addr,
            tokens,
            allow_origins: http.allow_origins,
            limits: http.limits,
            tls,
        };
        // Refuse a bad address or a missing token before loading any plugin.
        if !addr.ip().is_loopback() && options.tokens.is_none() {
            return Err(crate::service::http::HttpError::NeedsToken(addr).into());
        }
        let registry = opts.open()?;
        let events = registry.subscribe();
        let _watch = registry.watch().context("cannot watch the plugin folder")?;
        let router = Router::new(registry, router_config(limits, tasks));
        let mut server = HttpServer::bind(options, router).await?;
        if let Some(key) = state_key {
            server = server.with_state_key(key);
        }
        // On stderr whatever the log level: scripts (and tests binding port 0) read it.
        eprintln!("toolhost: serving {}", server.url());
        server.serve(Some(events), shutdown_signal()).await;
        anyhow::Ok(())
    })?;
    rt.shutdown_timeout(Duration::from_millis(100));
    Ok(ExitCode::SUCCESS)
}

/// Every connection takes a descriptor: the soft limit (often 1,024) is raised to the hard
/// one, and the connection bound is kept below it (`HttpServer::bind`).
fn raise_descriptor_limit() {
    let show = |v: Option<u64>| v.map_or("unlimited".to_string(), |v| v.to_string());
    match crate::service::http::raise_descriptor_limit() {
        Ok(((before, _), (after, _))) if before != after => tracing::info!(
            target: "toolhost::http",
            "raised the limit of open files (descriptors) from {} to {}",
            show(before),
            show(after)
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(
            target: "toolhost::http",
            "cannot raise the limit of open files (descriptors): {e}"
        ),
    }
}

/// SIGTERM or SIGINT.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
