//! `toolhost serve --http` as a process of the sandbox, the official Python MCP client, and a
//! minimal HTTP client of our own for the stateless (2026-07-28) requests.

use std::{
    env,
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    time::Duration,
};

use serde_json::{json, Value};

use crate::{harness::Sandbox, proc::Proc, wait::poll};

/// The token the sandbox's token file holds.
pub const TOKEN: &str = "e2e-token-0123456789abcdef0123456789";

/// The version of the `mcp` package `scripts/install-python-mcp` installs.
pub const PYTHON_MCP_VERSION: &str = "2.3.0";

/// A running `toolhost serve --http` on a port the OS chose.
pub struct HttpServe {
    pub proc: Proc,
    pub addr: SocketAddr,
}

impl HttpServe {
    /// Starts `toolhost serve --http 127.0.0.1:0 --auth-token-file <TOKEN's file> <args>` on the
    /// sandbox's plugins, and waits for the address it prints.
    pub fn start(sandbox: &Sandbox, args: &[&str]) -> Self {
        let tokens = token_file(sandbox.path());
        let mut all = vec![
            "--http",
            "127.0.0.1:0",
            "--auth-token-file",
            tokens.to_str().expect("a UTF-8 path"),
        ];
        all.extend_from_slice(args);
        let proc = Proc::spawn("toolhost serve --http", sandbox.serve_command(&all));
        let addr = poll(Duration::from_secs(30), Duration::from_millis(20), || {
            proc.stderr()
                .lines()
                .find_map(|l| l.strip_prefix("toolhost: serving http://"))
                .and_then(|rest| rest.strip_suffix("/mcp"))
                .and_then(|a| a.parse().ok())
        })
        .unwrap_or_else(|| panic!("serve --http never said its address:\n{}", proc.report()));
        HttpServe { proc, addr }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// How many requests of MCP method `method` the server has logged.
    pub fn logged(&self, method: &str) -> usize {
        let needle = format!("mcp=\"{method}\"");
        self.proc
            .stderr()
            .lines()
            .filter(|l| l.contains(&needle))
            .count()
    }
}

/// Writes [`TOKEN`] to a private token file under `dir`; returns its path.
pub fn token_file(dir: &Path) -> PathBuf {
    let path = dir.join("tokens");
    std::fs::write(&path, format!("# e2e\n{TOKEN}\n")).expect("write the token file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .expect("chmod the token file");
    }
    path
}

/// A 2026-07-28 request (each stands alone: any replica can answer it) with the token, over a
/// connection of its own; returns the status and the JSON body.
pub fn modern(addr: SocketAddr, path: &str, id: i64, method: &str, params: Value) -> (u16, Value) {
    let mut params = if params.is_null() { json!({}) } else { params };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let name = params["name"].as_str().map(str::to_string);
    let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\
         content-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         authorization: Bearer {TOKEN}\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: {method}\r\ncontent-length: {}\r\n",
        body.len()
    );
    if let Some(n) = name {
        head.push_str(&format!("mcp-name: {n}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body.as_bytes()))
        .expect("send the request");
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .expect("the whole response within 30 s");
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {text:?}"));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    let json = serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"));
    (status, json)
}

/// The Python interpreter with the official `mcp` package, or `None` when it is missing and
/// the test should be skipped (under CI a missing one fails the test). `TOOLHOST_E2E_PYTHON`,
/// else the virtualenv `scripts/install-python-mcp` makes:
/// `${TOOLHOST_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/python-mcp-2.3.0/bin/python`.
pub fn python_mcp_or_skip() -> Option<PathBuf> {
    let var = |name: &str| {
        env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let path = var("TOOLHOST_E2E_PYTHON").unwrap_or_else(|| {
        var("TOOLHOST_CLI_CACHE")
            .unwrap_or_else(|| {
                var("XDG_CACHE_HOME")
                    .unwrap_or_else(|| var("HOME").unwrap_or_default().join(".cache"))
                    .join("toolhost")
            })
            .join(format!("python-mcp-{PYTHON_MCP_VERSION}/bin/python"))
    });
    if path.is_file() {
        return Some(path);
    }
    let how = "run scripts/install-python-mcp (or set TOOLHOST_E2E_PYTHON)";
    if env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("the Python MCP client is not at {}; {how}", path.display());
    }
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: the Python MCP client is not at {}; {how}",
        path.display()
    );
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests look for the version `scripts/install-python-mcp` installs.
    #[test]
    fn install_script_pins_the_version_the_tests_look_for() {
        let script = std::fs::read_to_string(
            crate::harness::workspace_root().join("scripts/install-python-mcp"),
        )
        .unwrap();
        assert!(
            script.contains(&format!("\nversion={PYTHON_MCP_VERSION}\n")),
            "scripts/install-python-mcp does not pin {PYTHON_MCP_VERSION}"
        );
    }
}
