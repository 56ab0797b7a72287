//! `serve --http` under load, as a team's clients would use it: 100 clients making 100 calls
//! each at once, every one answered right; and 1,000 idle sessions that expire and give their
//! room back. And under exhaustion, as an attacker would try it on the process itself: many
//! unfinished bodies (memory) and many idle connections (descriptors). Counts, not times: how
//! fast is the benchmark's business (`toolhost-bench-http --load`, docs/benchmarks.md).

// A test may unwrap a lock (the host's poisoning policy is for production code: clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use std::{
    io::BufRead as _,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use common::http::{Req, Setup};
use serde_json::json;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};
use toolhost::service::http::HttpLimits;

/// A 2026-07-28 `tools/call` of `calc__add` (as `Server::modern` writes one).
fn add(addr: std::net::SocketAddr, id: i64, x: i64, y: i64) -> Req {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
    "name": "calc__add", "arguments": {"x": x, "y": y},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "load", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    Req::new(addr, "POST", "/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "calc__add")
        .body(body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_clients_of_a_hundred_calls_are_all_answered() {
    let server = Setup::new(&["calc"]).start().await;
    let addr = server.addr;
    let clients: Vec<_> = (0..100i64)
        .map(|c| {
            tokio::spawn(async move {
                let mut wrong = Vec::new();
                for i in 0..100i64 {
                    let id = c * 1000 + i;
                    let r = add(addr, id, c, i).send().await;
                    let reply = r.json();
                    let ok = r.status == 200
                        && reply["id"] == id
                        && reply["result"]["content"][0]["text"]
                            .as_str()
                            .and_then(|t| t.parse::<i64>().ok())
                            == Some(c + i);
                    if !ok {
                        wrong.push(format!("client {c} call {i}: {} {}", r.status, r.body));
                    }
                }
                wrong
            })
        })
        .collect();
    let mut wrong = Vec::new();
    for c in clients {
        wrong.extend(
            tokio::time::timeout(Duration::from_secs(300), c)
                .await
                .expect("every client done within 300 s")
                .expect("a client task"),
        );
    }
    assert!(
        wrong.is_empty(),
        "{} of 10,000 calls failed, first: {:?}",
        wrong.len(),
        wrong.first()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_idle_sessions_expire_and_give_their_room_back() {
    let mut setup = Setup::new(&["calc"]);
    setup.limits = HttpLimits {
        max_sessions: 1000,
        session_idle_secs: 1,
        ..HttpLimits::default()
    };
    let server = setup.start().await;
    let open = |server: &common::http::Server| {
        server.post(
            "/mcp",
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"idle","version":"1"}}}),
        )
    };
    for _ in 0..1000 {
        let r = open(&server).send().await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    // Left idle, they end and give their room back: 1,000 more fit under the bound of 1,000
    // (a probe would keep one alive: only new sessions are asked for).
    let (mut reopened, mut waits) = (0, 0);
    while reopened < 1000 {
        match open(&server).send().await.status {
            200 => reopened += 1,
            // Some of the first thousand not swept yet.
            503 => {
                waits += 1;
                assert!(
                    waits < 600,
                    "the expired sessions' room did not come back ({reopened} reopened)"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("status {other}"),
        }
    }
}

/// `toolhost serve --http 127.0.0.1:0` as a process of its own (under `sh -c 'ulimit ...'`
/// when `ulimit` is given), its address, and what it logs.
struct Spawned {
    child: std::process::Child,
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    _plugins: tempfile::TempDir,
}

impl Spawned {
    fn start(extra: &[&str], ulimit: Option<&str>) -> Spawned {
        let plugins = common::plugin_dir(&["calc"]);
        let mut args = vec!["serve", "--http", "127.0.0.1:0"];
        args.extend(extra);
        let direct = common::toolhost(&args, plugins.path());
        let mut cmd = match ulimit {
            None => direct,
            Some(limit) => {
                let mut sh = std::process::Command::new("sh");
                sh.arg("-c")
                    .arg(format!(r#"ulimit {limit} && exec "$0" "$@""#))
                    .arg(direct.get_program())
                    .args(direct.get_args())
                    .env_remove("TOOLHOST_PLUGINS")
                    .env_remove("TOOLHOST_LOCK")
                    .env_remove("RUST_LOG");
                sh
            }
        };
        let mut child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn toolhost");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let kept = log.clone();
        // Read to the end, so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("toolhost: serving http://") {
                    let _ = tx.send(url.trim_end_matches("/mcp").to_string());
                }
                kept.lock().unwrap().push(line);
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no address: {:?}", log.lock().unwrap()))
            .parse()
            .unwrap();
        Spawned {
            child,
            addr,
            log,
            _plugins: plugins,
        }
    }

    /// Its resident memory, in KiB.
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    fn logged(&self, what: &str) -> bool {
        self.log.lock().unwrap().iter().any(|l| l.contains(what))
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What became of an unfinished body.
enum Body {
    /// All but its last byte sent, no answer: the server holds it (the connection with it).
    Held(TcpStream),
    /// Answered (its status) or cut off before all was sent.
    Refused(Option<u16>),
}

/// The status of the response starting `head`, if it is one.
fn status_of(head: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(head).ok()?;
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// A POST announcing `len` bytes of body (`Content-Length`).
fn post_head(addr: SocketAddr, len: usize) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json\r\ncontent-length: {len}\r\n\r\n"
    )
}

/// Sends a POST of `len` bytes but its last, reading any answer meanwhile.
async fn unfinished_body(addr: SocketAddr, len: usize) -> Body {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    if s.write_all(post_head(addr, len).as_bytes()).await.is_err() {
        return Body::Refused(None);
    }
    let chunk = vec![b' '; 64 << 10];
    let mut answer = vec![0u8; 4096];
    let mut sent = 0;
    let (mut from, mut to) = s.split();
    while sent < len - 1 {
        let n = chunk.len().min(len - 1 - sent);
        tokio::select! {
            biased;
            r = from.read(&mut answer) => {
                return Body::Refused(r.ok().and_then(|n| status_of(&answer[..n])));
            }
            w = to.write_all(&chunk[..n]) => {
                if w.is_err() {
                    return Body::Refused(None);
                }
                sent += n;
            }
        }
    }
    Body::Held(s)
}

/// Many connections each sending an unfinished 4 MiB body: the server holds at most its body
/// budget of them (64 MiB by default), refuses the others with 503 (and `Retry-After`), its
/// memory stays within the budget and some room, and a small call is still answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_bodies_are_held_within_the_body_budget() {
    const BODY: usize = 4 << 20;
    const CONNECTIONS: usize = 64;
    const BUDGET_KIB: u64 = 64 << 10;
    let server = Spawned::start(&[], None);
    let addr = server.addr;
    let r = add(addr, 1, 2, 3).send().await;
    assert_eq!(r.status, 200, "{}", r.body);
    let before = server.rss_kib();
    let senders: Vec<_> = (0..CONNECTIONS)
        .map(|_| tokio::spawn(unfinished_body(addr, BODY)))
        .collect();
    let mut held = Vec::new();
    let mut refused = 0;
    for s in senders {
        match tokio::time::timeout(Duration::from_secs(120), s)
            .await
            .expect("every body sent or refused within 120 s")
            .unwrap()
        {
            Body::Held(stream) => held.push(stream),
            Body::Refused(status) => {
                assert_eq!(status, Some(503), "a body over the budget is answered 503");
                refused += 1;
            }
        }
    }
    // A body written whole into the sockets' buffers before the server read its head looks
    // held from here until the server gets to it (on a loaded machine, seconds later): a body
    // the server holds gets no answer, one it refuses gets its 503 then.
    let mut answered = Vec::new();
    for mut stream in held {
        answered.push(tokio::spawn(async move {
            let mut answer = vec![0u8; 4096];
            let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut answer));
            let status = match read.await {
                Ok(Ok(n)) => status_of(&answer[..n]),
                _ => None,
            };
            (stream, status)
        }));
    }
    let mut held = Vec::new();
    for a in answered {
        match a.await.unwrap() {
            (_, Some(503)) => refused += 1,
            // Silence: held. Anything else (the body's own time limit on a slow run): it was
            // held until then, so it counts against the budget as held.
            (stream, _) => held.push(stream),
        }
    }
    let grew = server.rss_kib().saturating_sub(before);
    eprintln!(
        "{} bodies held, {refused} refused; the server grew by {} MiB",
        held.len(),
        grew >> 10
    );
    assert!(
        refused > 0,
        "every one of {CONNECTIONS} unfinished bodies was held"
    );
    assert!(
        held.len() as u64 * (BODY as u64 >> 10) <= BUDGET_KIB,
        "{} bodies of 4 MiB held, over the budget",
        held.len()
    );
    assert!(
        grew <= BUDGET_KIB + (48 << 10),
        "the server grew by {} MiB holding {} unfinished bodies",
        grew >> 10,
        held.len()
    );
    // One more large body is refused at once, with a time to come back.
    let mut probe = TcpStream::connect(addr).await.unwrap();
    probe
        .write_all(post_head(addr, BODY).as_bytes())
        .await
        .unwrap();
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(20), probe.read(&mut answer))
        .await
        .expect("a large body over the budget is answered")
        .unwrap();
    let text = String::from_utf8_lossy(&answer[..n]).to_lowercase();
    assert_eq!(status_of(&answer[..n]), Some(503), "{text}");
    assert!(text.contains("retry-after:"), "{text}");
    // A small call still gets through.
    let r = add(addr, 2, 2, 2).send().await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"]["content"][0]["text"], "4");
    drop(held);
}

/// Idle connections that fill the descriptors toolhost may open (`ulimit -n 256`) do not
/// keep a legitimate client out: the connection bound is kept below the limit, so toolhost
/// can still accept, and the oldest idle connection is closed to make room: 200 while they
/// are open, and once they are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_is_answered_while_idle_connections_fill_the_descriptors() {
    // Idle connections are reaped after the head timeout: long here, so only the
    // connection bound can answer the client.
    let server = Spawned::start(&["--header-timeout-secs", "300"], Some("-n 256"));
    let addr = server.addr;
    let mut idle = Vec::new();
    for _ in 0..400 {
        idle.push(TcpStream::connect(addr).await.expect("connect"));
    }
    let r = tokio::time::timeout(Duration::from_secs(30), add(addr, 1, 2, 3).send())
        .await
        .expect("a legitimate call answered while 400 idle connections are open");
    eprintln!(
        "with 400 idle connections open: {} {}",
        r.status,
        r.body.trim()
    );
    assert_eq!(r.status, 200, "{:?} {}", r.headers, r.body);
    assert_eq!(r.json()["result"]["content"][0]["text"], "5");
    assert!(
        server.logged("connections"),
        "the clamped connection bound is not logged: {:?}",
        server.log.lock().unwrap()
    );
    drop(idle);
    let mut answered = false;
    for _ in 0..200 {
        let r = tokio::time::timeout(Duration::from_secs(30), add(addr, 2, 2, 2).send())
            .await
            .expect("an answer");
        if r.status == 200 {
            answered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        answered,
        "never answered once the idle connections were gone"
    );
}

/// A soft descriptor limit below the hard one is raised to it at start: 400 idle connections
/// under `ulimit -Sn 256` then fit, and a legitimate call is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_soft_descriptor_limit_is_raised_to_the_hard_one() {
    let hard = hard_descriptor_limit();
    if hard < 2048 {
        eprintln!("the hard descriptor limit is {hard}: nothing to raise to");
        return;
    }
    let server = Spawned::start(&["--header-timeout-secs", "300"], Some("-Sn 256"));
    let addr = server.addr;
    let mut idle = Vec::new();
    for _ in 0..400 {
        idle.push(TcpStream::connect(addr).await.expect("connect"));
    }
    let r = tokio::time::timeout(Duration::from_secs(30), add(addr, 1, 2, 3).send())
        .await
        .expect("a legitimate call answered while 400 idle connections are open");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        server.logged("descriptor"),
        "the raised limit is not logged: {:?}",
        server.log.lock().unwrap()
    );
    drop(idle);
}

/// This process's hard limit of open files (the spawned server inherits it).
fn hard_descriptor_limit() -> u64 {
    let out = std::process::Command::new("sh")
        .args(["-c", "ulimit -Hn"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().unwrap_or(u64::MAX)
}

/// A connection that sends no request (freshly opened, or kept alive after one) is closed
/// after the head timeout, giving its descriptor back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_after_the_head_timeout() {
    let mut setup = Setup::new(&["calc"]);
    setup.limits = HttpLimits {
        header_timeout_secs: 1,
        ..HttpLimits::default()
    };
    let server = setup.start().await;
    let closed = |mut s: TcpStream| async move {
        let mut rest = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut rest))
            .await
            .expect("the idle connection closed by the server")
            .map(|_| rest)
    };
    // Opened and silent.
    let silent = TcpStream::connect(server.addr).await.unwrap();
    assert!(closed(silent).await.is_ok());
    // Kept alive after a request, then silent.
    let mut kept = TcpStream::connect(server.addr).await.unwrap();
    let head = format!("GET /healthz HTTP/1.1\r\nhost: {}\r\n\r\n", server.addr);
    kept.write_all(head.as_bytes()).await.unwrap();
    let rest = closed(kept).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&rest);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
}

/// An answer its client does not read keeps its request's place among those in flight
/// (`--max-requests`) until the server has handed it to the connection: unread answers are
/// bounded by the requests in flight, not by the connections (docs/deploy.md, "Memory and
/// open files"). With room for 2, a third large answer left unread is refused 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_answers_keep_their_place_among_the_requests_in_flight() {
    let mut setup = Setup::new(&["faulty"]);
    setup.limits = HttpLimits {
        max_requests: 2,
        ..HttpLimits::default()
    };
    // Larger than what the kernel buffers for a connection (`tcp_wmem`, 4 MiB at most).
    setup.router.max_result_bytes = 16 << 20;
    let server = setup.start().await;
    let uri = "faulty://bytes/6000000";
    let body =
        json!({"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":uri,"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},
        "io.modelcontextprotocol/clientCapabilities":{}}}})
        .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         accept: application/json\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: resources/read\r\nmcp-name: {uri}\r\ncontent-length: {}\r\n\r\n",
        server.addr,
        body.len()
    );
    // Clients that ask and do not read (a small receive buffer, so the answer stays with
    // the server).
    let ask = || async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut s = socket.connect(server.addr).await.unwrap();
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body.as_bytes()).await.unwrap();
        let mut first = vec![0u8; 12];
        s.read_exact(&mut first).await.unwrap();
        (s, String::from_utf8_lossy(&first).into_owned())
    };
    let mut unread = Vec::new();
    for _ in 0..2 {
        let (s, status) = ask().await;
        assert_eq!(status, "HTTP/1.1 200", "an answer within the bound");
        unread.push(s);
    }
    let (_third, status) = ask().await;
    assert_eq!(
        status, "HTTP/1.1 503",
        "a third answer while two large ones are unread"
    );
    // Read whole, they give their places back.
    for s in unread {
        let mut s = tokio::io::BufReader::new(s);
        let mut length = 0;
        loop {
            let mut line = String::new();
            tokio::io::AsyncBufReadExt::read_line(&mut s, &mut line)
                .await
                .unwrap();
            if line.trim().is_empty() {
                break;
            }
            if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = n.trim().parse().unwrap();
            }
        }
        assert!(length > 6_000_000, "{length}");
        let mut answer = vec![0u8; length];
        s.read_exact(&mut answer).await.unwrap();
    }
    let r = server
        .modern("/mcp", 2, "tools/list", serde_json::Value::Null)
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Puts `lib` (built) into the server's plugin folder, as an install would.
fn copy_plugin(server: &common::http::Server, lib: &str) {
    let name = common::lib_file(lib);
    let tmp = server.plugin_dir().join(format!(".{name}.tmp"));
    std::fs::copy(common::built_plugins().join(&name), &tmp).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::rename(&tmp, server.plugin_dir().join(&name)).unwrap();
}

/// A connection sending a request head one byte now and then (slowloris), until dropped.
fn slowloris(addr: SocketAddr) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let Ok(mut s) = TcpStream::connect(addr).await else {
            return;
        };
        let head = format!("POST /mcp HTTP/1.1\r\nhost: {addr}\r\nx-slow: ");
        for b in head.bytes().chain(std::iter::repeat(b'a')) {
            if s.write_all(&[b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
}

/// Idle and slowloris connections filling `--max-connections` do not keep a legitimate
/// client out: the idle connection open longest is closed to make room, and the client is
/// served (not 503). A connection with a call in flight and one holding a listen stream are
/// busy, not idle: they are never closed for room, though they are the oldest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_make_room_for_a_client_but_busy_ones_stay() {
    const MAX: usize = 50;
    let mut setup = Setup::new(&["calc", "faulty"]);
    setup.limits = HttpLimits {
        max_connections: MAX,
        // Idle connections are not reaped by time here: only making room can answer.
        header_timeout_secs: 300,
        ..HttpLimits::default()
    };
    let server = setup.start().await;
    let addr = server.addr;
    // The oldest two connections: a listen stream and a call in flight.
    let stream = server
        .modern(
            "/mcp",
            1,
            "subscriptions/listen",
            json!({"notifications":{"toolsListChanged":true}}),
        )
        .open()
        .await;
    assert_eq!(stream.status(), 200);
    let mut events = common::http::Events::new(stream);
    let (_, ack) = events
        .next(Duration::from_secs(30))
        .await
        .expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("ran");
    let call = server
        .modern(
            "/mcp",
            2,
            "tools/call",
            json!({"name":"faulty__stuck","arguments":{"ms":4000,"marker":marker}}),
        )
        .send();
    let in_flight = tokio::spawn(call);
    for _ in 0..600 {
        if marker.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(marker.exists(), "the stuck call never started");
    // Then as many idle and slowloris connections as the server may hold, and more.
    let mut idle = Vec::new();
    let mut slow = Vec::new();
    for i in 0..MAX + 10 {
        if i % 2 == 0 {
            idle.push(TcpStream::connect(addr).await.expect("connect"));
        } else {
            slow.push(slowloris(addr));
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let r = tokio::time::timeout(Duration::from_secs(30), add(addr, 3, 2, 3).send())
        .await
        .expect("a legitimate call answered");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"]["content"][0]["text"], "5");
    // Again, while the idle connections are still open.
    let r = add(addr, 4, 2, 2).send().await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"]["content"][0]["text"], "4");
    // The call in flight is answered, and the listen stream still hears.
    let r = tokio::time::timeout(Duration::from_secs(30), in_flight)
        .await
        .expect("the call in flight answered")
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["result"]["content"][0]["text"],
        "was stuck 4000 ms"
    );
    copy_plugin(&server, "text");
    let (_, changed) = events
        .next(Duration::from_secs(30))
        .await
        .expect("the listen stream still open");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    for s in slow {
        s.abort();
    }
    drop(idle);
}

/// A plugin stuck in its call holds up nobody else: while `faulty__stuck` ignores its
/// cancellation and sleeps past its 3 s timeout, other clients' calls (of another plugin,
/// and of the stuck plugin's other tools) are answered, every one before the stuck call's own
/// timeout answer. Ordered, not timed: the stuck call's reply is awaited only after theirs.
///
/// On a runtime of two workers the stuck call runs on the worker that read it, the one call
/// that may (`toolhost-http`'s `here.rs`): the watchdog arms its timeout, the other worker
/// serves the rest, and the stuck tool's next calls go to the executor. (The test's runtime
/// waits for the stuck worker when it is dropped, as `serve`'s does not.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_call_holds_up_no_other_clients_call() {
    let mut setup = Setup::new(&["calc", "faulty"]);
    setup
        .router
        .plugin_timeouts
        .insert("faulty".into(), Duration::from_secs(3));
    let server = setup.start().await;
    let addr = server.addr;
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("started");
    let stuck = tokio::spawn(
        server
            .modern(
                "/mcp",
                1,
                "tools/call",
                json!({"name": "faulty__stuck", "arguments": {"ms": 6_000, "marker": marker}}),
            )
            .send(),
    );
    // The stuck call runs before the others are sent.
    common::eventually(Duration::from_secs(10), "the stuck call starts", || {
        marker.exists()
    })
    .await;
    for i in 0..5i64 {
        let r = add(addr, 100 + i, i, 1).send().await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            r.json()["result"]["content"][0]["text"],
            (i + 1).to_string(),
            "{}",
            r.body
        );
        let r = server
            .modern(
                "/mcp",
                200 + i,
                "tools/call",
                json!({"name": "faulty__stuck", "arguments": {"ms": 0}}),
            )
            .send()
            .await;
        assert_eq!(
            r.json()["result"]["content"][0]["text"],
            "was stuck 0 ms",
            "{}",
            r.body
        );
        assert!(
            !stuck.is_finished(),
            "the stuck call ended before the others"
        );
    }
    let r = stuck.await.unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let reply = r.json();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("timed out")),
        "{reply}"
    );
}
