//! `serve --http` as an attacker would try it: no token or a wrong one, a foreign origin or a
//! rebound host name, a made-up session, an oversized body, a non-loopback address without
//! tokens. Each refusal is checked for its status and that no tool ran (the faulty plugin's
//! `stuck` tool writes a marker file first thing), and each test also shows the same call
//! running when allowed, so the marker proves something.

mod common;

use std::time::Duration;

use common::http::{Req, Setup, TOKEN};
use serde_json::{json, Value};
use toolhost::service::http::{HttpError, HttpLimits, HttpOptions, HttpServer};

/// A `tools/call` of `faulty__stuck` that writes `marker` when it runs.
fn stuck_call(marker: &std::path::Path) -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
        "name":"faulty__stuck","arguments":{"ms":1,"marker":marker}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_or_a_wrong_one_is_401_and_runs_nothing() {
    let server = Setup::new(&["faulty"]).with_token().start().await;
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("ran");
    let session_less = |auth: Option<&str>| {
        let mut r = server.modern(
            "/mcp",
            1,
            "tools/call",
            json!({"name":"faulty__stuck","arguments":{"ms":1,"marker":marker}}),
        );
        if let Some(a) = auth {
            r = r.header("authorization", a);
        }
        r
    };
    for auth in [
        None,
        Some("Bearer wrong-token-0123456789abcdef"),
        Some(&format!("Bearer {TOKEN}x")),
        Some(&format!("Basic {TOKEN}")),
        Some("Bearer "),
    ] {
        let r = session_less(auth).send().await;
        assert_eq!(r.status, 401, "{auth:?}: {}", r.body);
        let challenge = if auth.is_some() {
            r#"Bearer realm="toolhost", error="invalid_token""#
        } else {
            r#"Bearer realm="toolhost""#
        };
        assert_eq!(r.header("www-authenticate"), Some(challenge));
        assert_eq!(r.json()["error"]["code"], -32000);
        // A 2025-11-25 client cannot even open a session.
        let mut init = server.post(
            "/mcp",
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}),
        );
        if let Some(a) = auth {
            init = init.header("authorization", a);
        }
        let r = init.send().await;
        assert_eq!(r.status, 401);
        assert!(r.header("mcp-session-id").is_none());
        // Nor the GET stream, nor the per-plugin endpoint.
        let r = Req::new(server.addr, "POST", "/mcp/faulty")
            .body(stuck_call(&marker).to_string())
            .send()
            .await;
        assert_eq!(r.status, 401);
    }
    assert!(
        !marker.exists(),
        "a tool ran for a request without a valid token"
    );
    // The health check needs no token and says nothing more.
    let r = Req::new(server.addr, "GET", "/healthz").send().await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok\n"));
    // With the token, the same call runs.
    let r = session_less(Some(&format!("Bearer {TOKEN}"))).send().await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"]["content"][0]["text"], "was stuck 1 ms");
    assert!(marker.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_origin_or_rebound_host_is_403_and_runs_nothing() {
    let server = Setup::new(&["faulty"]).start().await;
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("ran");
    let call = stuck_call(&marker);
    let port = server.addr.port();
    for (origin, host) in [
        (Some("http://evil.example"), None),
        (Some(&format!("http://evil.example:{port}")[..]), None),
        // DNS rebinding: the page's origin and the Host both name the attacker's site.
        (
            Some(&format!("http://evil.example:{port}")[..]),
            Some(&format!("evil.example:{port}")[..]),
        ),
        (None, Some(&format!("evil.example:{port}")[..])),
        (Some("null"), None),
        (Some(&format!("https://localhost:{port}")[..]), None),
    ] {
        let mut r = server.post("/mcp", &call);
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        if let Some(h) = host {
            r = r.header("host", h);
        }
        let reply = r.send().await;
        assert_eq!(
            reply.status, 403,
            "origin {origin:?} host {host:?}: {}",
            reply.body
        );
        assert!(reply.json()["error"].is_object());
    }
    assert!(!marker.exists(), "a tool ran for a foreign origin");
    // The server's own origin is allowed (a page it served), as is no origin at all.
    let id = server.initialize("/mcp").await;
    let r = server
        .post("/mcp", &call)
        .header("origin", &format!("http://localhost:{port}"))
        .header("mcp-session-id", &id)
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(marker.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_origins_are_allowed() {
    let mut setup = Setup::new(&["calc"]);
    setup.allow_origins = vec!["http://localhost:6274".into()];
    let server = setup.start().await;
    let discover = |origin: &str| {
        server
            .modern("/mcp", 1, "server/discover", Value::Null)
            .header("origin", origin)
    };
    assert_eq!(discover("http://localhost:6274").send().await.status, 200);
    assert_eq!(discover("http://localhost:6275").send().await.status, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_or_ended_session_is_404() {
    let server = Setup::new(&["faulty"]).start().await;
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("ran");
    let call = stuck_call(&marker);
    let r = server
        .post("/mcp", &call)
        .header("mcp-session-id", "0123456789abcdef0123456789abcdef")
        .send()
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
    // No session at all: 400, so the client knows to initialize.
    let r = server.post("/mcp", &call).send().await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(!marker.exists());
    // A session of another endpoint is not one of this one.
    let id = server.initialize("/mcp/faulty").await;
    let r = server
        .post("/mcp", &call)
        .header("mcp-session-id", &id)
        .send()
        .await;
    assert_eq!(r.status, 404);
    assert!(!marker.exists());
    // A real one works until DELETE ends it.
    let id = server.initialize("/mcp").await;
    let r = server
        .post("/mcp", &call)
        .header("mcp-session-id", &id)
        .send()
        .await;
    assert_eq!(r.status, 200);
    std::fs::remove_file(&marker).unwrap();
    let r = Req::new(server.addr, "DELETE", "/mcp")
        .header("mcp-session-id", &id)
        .send()
        .await;
    assert_eq!(r.status, 200);
    let r = server
        .post("/mcp", &call)
        .header("mcp-session-id", &id)
        .send()
        .await;
    assert_eq!(r.status, 404);
    let r = Req::new(server.addr, "GET", "/mcp")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &id)
        .send()
        .await;
    assert_eq!(r.status, 404);
    assert!(!marker.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_is_413_and_a_huge_head_431() {
    let mut setup = Setup::new(&["faulty"]);
    setup.limits = HttpLimits {
        max_body_bytes: 2048,
        max_header_bytes: 8192,
        ..HttpLimits::default()
    };
    let server = setup.start().await;
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("ran");
    let mut call = stuck_call(&marker);
    call["params"]["arguments"]["padding"] = json!("x".repeat(4096));
    let r = server
        .modern("/mcp", 1, "tools/call", call["params"].clone())
        .send()
        .await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], -32600);
    let r = server
        .modern("/mcp", 1, "server/discover", Value::Null)
        .header("x-filler", &"y".repeat(16 << 10))
        .send()
        .await;
    assert_eq!(r.status, 431);
    assert!(!marker.exists());
    // Under the limit, it runs.
    call["params"]["arguments"]
        .as_object_mut()
        .unwrap()
        .remove("padding");
    let r = server
        .modern("/mcp", 1, "tools/call", call["params"].clone())
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(marker.exists());
}

#[tokio::test]
async fn a_non_loopback_address_without_tokens_refuses_to_start() {
    let (router, _dirs) =
        common::open_router(&["calc"], toolhost::handler::RouterConfig::default());
    let options = |addr: &str| HttpOptions {
        addr: addr.parse().unwrap(),
        tokens: None,
        allow_origins: Vec::new(),
        limits: HttpLimits::default(),
        tls: None,
    };
    for addr in ["0.0.0.0:0", "[::]:0", "192.0.2.1:8765"] {
        match HttpServer::bind(options(addr), router.clone()).await {
            Err(HttpError::NeedsToken(_)) => {}
            Err(e) => panic!("{addr}: refused for another reason: {e}"),
            Ok(_) => panic!("{addr}: started without tokens"),
        }
    }
    assert!(HttpServer::bind(options("127.0.0.1:0"), router)
        .await
        .is_ok());
}

#[test]
fn the_command_refuses_a_public_address_without_a_token_file() {
    let plugins = common::plugin_dir(&["calc"]);
    let out = common::toolhost(&["serve", "--http", "0.0.0.0:0"], plugins.path())
        .output()
        .expect("run toolhost");
    assert!(!out.status.success());
    let err = common::text(&out.stderr);
    assert!(err.contains("--auth-token-file"), "{err}");
    // A token file others can read is refused too.
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{TOKEN}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = common::toolhost(
            &[
                "serve",
                "--http",
                "0.0.0.0:0",
                "--auth-token-file",
                tokens.to_str().unwrap(),
            ],
            plugins.path(),
        )
        .output()
        .expect("run toolhost");
        assert!(!out.status.success());
        let err = common::text(&out.stderr);
        assert!(err.contains("chmod 600"), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_over_the_per_client_bound_are_429() {
    let mut setup = Setup::new(&["faulty"]);
    setup.limits = HttpLimits {
        max_requests_per_client: 1,
        ..HttpLimits::default()
    };
    let server = setup.start().await;
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("slow");
    // One call in flight (its stream open), then a second from the same address.
    let first = server
        .modern(
            "/mcp",
            1,
            "tools/call",
            json!({"name":"faulty__slow","arguments":{"ms":30000,"marker":marker},
                   "_meta":{"progressToken":1}}),
        )
        .open()
        .await;
    assert_eq!(first.status(), 200);
    let r = server
        .modern("/mcp", 2, "tools/list", Value::Null)
        .send()
        .await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.header("retry-after"), Some("1"));
    // The first call runs (its first progress notification came), then its client goes
    // away: the call is cancelled, its slot freed. (Gone before the call started, it would
    // never start, and write no marker.)
    let mut events = common::http::Events::new(first);
    let (_, progress) = events
        .next(Duration::from_secs(30))
        .await
        .expect("a progress event");
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    drop(events);
    common::eventually(
        Duration::from_secs(10),
        "the slow call sees its cancellation",
        || std::fs::read_to_string(&marker).is_ok_and(|m| m.contains("cancelled")),
    )
    .await;
    let mut listed = false;
    for _ in 0..500 {
        let r = server
            .modern("/mcp", 3, "tools/list", Value::Null)
            .send()
            .await;
        if r.status == 200 {
            listed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(listed, "the slot was never given back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_serves_https_and_keeps_its_key_private() {
    use toolhost::service::http::{read_certs, tls_acceptor, SecretError, TlsError, TlsFiles};
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key.pem");
    std::fs::copy(fixtures.join("key.pem"), &key).unwrap();
    let files = TlsFiles {
        cert: fixtures.join("cert.pem"),
        key: key.clone(),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            tls_acceptor(&files, false),
            Err(TlsError::Secret(SecretError::Readable { .. }))
        ));
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let mut setup = Setup::new(&["calc"]).with_token();
    setup.tls = Some(tls_acceptor(&files, false).expect("the fixture's certificate and key"));
    let server = setup.start().await;
    let roots = read_certs(&fixtures.join("ca.pem")).unwrap();
    let port = server.addr.port();
    let r = server
        .modern(
            "/mcp",
            1,
            "tools/call",
            json!({"name":"calc__add","arguments":{"x":2,"y":2}}),
        )
        .header("authorization", &format!("Bearer {TOKEN}"))
        .header("origin", &format!("https://localhost:{port}"))
        .send_tls(&roots)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"]["content"][0]["text"], "4");
    // The token is still required over TLS.
    let r = server
        .modern("/mcp", 2, "tools/list", Value::Null)
        .send_tls(&roots)
        .await;
    assert_eq!(r.status, 401);
    // Plain HTTP on the TLS port gets no answer.
    let stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let plain = hyper::client::conn::http1::handshake::<_, http_body_util::Full<bytes::Bytes>>(
        hyper_util::rt::TokioIo::new(stream),
    )
    .await;
    if let Ok((mut sender, conn)) = plain {
        tokio::spawn(conn);
        let req = hyper::Request::post("/mcp")
            .header("host", server.addr.to_string())
            .body(http_body_util::Full::new(bytes::Bytes::from_static(b"{}")))
            .unwrap();
        assert!(sender.send_request(req).await.is_err());
    }
}

/// Another token of the same file is another client: it cannot use, read or end a session
/// the first opened (404, as for an unknown session), and the owner's stream and session
/// carry on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_answers_only_to_the_token_that_opened_it() {
    const OTHER: &str = "another-token-fedcba9876543210";
    let mut setup = Setup::new(&["faulty"]);
    setup.tokens = Some(toolhost::service::http::Tokens::from_list([
        TOKEN.to_string(),
        OTHER.to_string(),
    ]));
    let server = setup.start().await;
    let (a, b) = (format!("Bearer {TOKEN}"), format!("Bearer {OTHER}"));
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("ran");
    let r = server
        .post(
            "/mcp",
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"owner","version":"1"}}}),
        )
        .header("authorization", &a)
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.header("mcp-session-id").expect("a session").to_string();
    let get = |auth: &str| {
        Req::new(server.addr, "GET", "/mcp")
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &id)
            .header("authorization", auth)
    };
    let owners = get(&a).open().await;
    assert_eq!(owners.status(), 200);
    let mut owners = common::http::Events::new(owners);

    // The other token: its call, its GET and its DELETE are all 404, and nothing runs.
    let r = server
        .post("/mcp", &stuck_call(&marker))
        .header("mcp-session-id", &id)
        .header("authorization", &b)
        .send()
        .await;
    assert_eq!(
        r.status, 404,
        "a call in another token's session: {}",
        r.body
    );
    let r = get(&b).send().await;
    assert_eq!(r.status, 404, "another token's GET stream: {}", r.body);
    let r = Req::new(server.addr, "DELETE", "/mcp")
        .header("mcp-session-id", &id)
        .header("authorization", &b)
        .send()
        .await;
    assert_eq!(r.status, 404, "another token's DELETE: {}", r.body);
    assert!(!marker.exists(), "a tool ran in another token's session");

    // The owner's stream is still open (a change reaches it) and its session still works.
    let name = common::lib_file("calc");
    let tmp = server.plugin_dir().join(format!(".{name}.tmp"));
    std::fs::copy(common::built_plugins().join(&name), &tmp).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::rename(&tmp, server.plugin_dir().join(&name)).unwrap();
    let (_, changed) = owners
        .next(Duration::from_secs(20))
        .await
        .expect("the owner's stream was closed");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    let r = server
        .post("/mcp", &stuck_call(&marker))
        .header("mcp-session-id", &id)
        .header("authorization", &a)
        .send()
        .await;
    assert_eq!(r.status, 200, "the owner's session: {}", r.body);
    assert!(marker.exists());
    let r = Req::new(server.addr, "DELETE", "/mcp")
        .header("mcp-session-id", &id)
        .header("authorization", &a)
        .send()
        .await;
    assert_eq!(r.status, 200);
}

/// A private token file (or TLS key) in a folder other users can write, without the sticky
/// bit, could be replaced by theirs: refused, naming the folder. The sticky bit (as on
/// `/tmp`) keeps others from replacing a file they do not own: accepted.
#[cfg(unix)]
#[test]
fn a_secret_in_a_folder_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    use toolhost::service::http::{read_key, Tokens};
    let top = tempfile::tempdir().unwrap();
    let shared = top.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let tokens = shared.join("tokens");
    std::fs::write(&tokens, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    let key = shared.join("key.pem");
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    std::fs::copy(fixtures.join("key.pem"), &key).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let chmod =
        |mode| std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(mode)).unwrap();
    let shown = shared.display().to_string();
    for mode in [0o777, 0o775] {
        chmod(mode);
        let e = Tokens::load(&tokens, false).expect_err("a token file in a writable folder");
        let e = e.to_string();
        assert!(e.contains(&shown) && e.contains("sticky"), "{mode:o}: {e}");
        let e = read_key(&key, false).expect_err("a TLS key in a writable folder");
        let e = e.to_string();
        assert!(e.contains(&shown) && e.contains("sticky"), "{mode:o}: {e}");
        // `--allow-shared` lifts it, as for plugin folders.
        assert!(Tokens::load(&tokens, true).is_ok());
    }
    // The command says it and does not start.
    chmod(0o777);
    let plugins = common::plugin_dir(&["calc"]);
    let out = common::toolhost(
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--auth-token-file",
            tokens.to_str().unwrap(),
        ],
        plugins.path(),
    )
    .output()
    .expect("run toolhost");
    assert!(!out.status.success());
    let err = common::text(&out.stderr);
    assert!(err.contains(&shown), "{err}");
    // And so does `doctor --http`.
    let out = common::toolhost(
        &[
            "doctor",
            "--http",
            "127.0.0.1:0",
            "--auth-token-file",
            tokens.to_str().unwrap(),
        ],
        plugins.path(),
    )
    .output()
    .expect("run toolhost doctor");
    let said = common::text(&out.stdout) + &common::text(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains(&shown), "{said}");
    // Sticky, like /tmp: accepted.
    chmod(0o1777);
    assert_eq!(Tokens::load(&tokens, false).unwrap().len(), 1);
    assert!(read_key(&key, false).is_ok());
    chmod(0o700);
    assert!(Tokens::load(&tokens, false).is_ok());
}

/// A secret reached through a symlink that lies in a folder others can write is refused,
/// even when both ends lie in private folders: they could point the link at another file.
/// Every folder a name is looked up in while the path resolves counts, not only those of the
/// path as named and of where it ends.
#[cfg(unix)]
#[test]
fn a_secret_reached_through_a_link_in_a_folder_others_can_write_is_refused() {
    use std::os::unix::{fs::symlink, fs::PermissionsExt};
    use toolhost::service::http::{read_key, Tokens};
    let top = tempfile::tempdir().unwrap();
    let (safe, open, real) = (
        top.path().join("safe"),
        top.path().join("open"),
        top.path().join("real"),
    );
    for d in [&safe, &open, &real] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::create_dir(real.join("sub")).unwrap();
    let tokens = real.join("sub/tokens");
    std::fs::write(&tokens, format!("{TOKEN}\n")).unwrap();
    let key = real.join("sub/key.pem");
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    std::fs::copy(fixtures.join("key.pem"), &key).unwrap();
    for f in [&tokens, &key] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    // safe/tokens -> open/hop -> real/sub/tokens, and the same for the key.
    symlink(&tokens, open.join("hop")).unwrap();
    symlink(open.join("hop"), safe.join("tokens")).unwrap();
    symlink(&key, open.join("hop.pem")).unwrap();
    symlink(open.join("hop.pem"), safe.join("key.pem")).unwrap();
    // safe/dir -> open/dirhop -> real/sub: a folder reached through the open one.
    symlink(real.join("sub"), open.join("dirhop")).unwrap();
    symlink(open.join("dirhop"), safe.join("dir")).unwrap();
    let named = [
        (safe.join("tokens"), safe.join("key.pem")),
        (safe.join("dir/tokens"), safe.join("dir/key.pem")),
    ];
    // While `open` is private, every path is fine.
    for (t, k) in &named {
        assert!(Tokens::load(t, false).is_ok(), "{}", t.display());
        assert!(read_key(k, false).is_ok(), "{}", k.display());
    }
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let shown = open.display().to_string();
    for (t, k) in &named {
        let e = Tokens::load(t, false)
            .expect_err("a token file through a link in a writable folder")
            .to_string();
        assert!(e.contains(&shown), "{}: {e}", t.display());
        let e = read_key(k, false)
            .expect_err("a TLS key through a link in a writable folder")
            .to_string();
        assert!(e.contains(&shown), "{}: {e}", k.display());
    }
    // The file itself, named directly, is fine.
    assert!(Tokens::load(&tokens, false).is_ok());
}

/// Issue 37 item 18: a FIFO given as `--state-key-file` hung start-up (no listener, no error)
/// until something wrote to it; refused at once as not a regular file, as are the token file
/// and the TLS key.
#[cfg(unix)]
#[test]
fn a_fifo_given_as_a_key_or_token_file_is_refused_without_hanging() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("key");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let plugins = tempfile::tempdir().unwrap();
    let fifo_arg = fifo.to_str().unwrap();
    for flag in ["--state-key-file", "--auth-token-file"] {
        let mut child = common::toolhost(
            &["serve", "--http", "127.0.0.1:0", flag, fifo_arg],
            plugins.path(),
        )
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run toolhost");
        // Not a measure of speed: a start-up that hangs must fail the test, not hang it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{flag} FIFO: toolhost serve hung at start-up");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(!status.success(), "{flag}: {err}");
        assert!(
            err.contains(fifo_arg) && err.contains("not a regular file (it is a FIFO)"),
            "{flag}: {err}"
        );
    }
}
