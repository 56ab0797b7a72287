//! A `serve --http` server in the test process and a plain HTTP client of it (hyper's client
//! connection, one per request, so a test can drop one mid-call).

use std::{net::SocketAddr, sync::Arc, time::Duration};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use toolhost::{
    handler::{Router, RouterConfig},
    registry::Registry,
    service::http::{HttpLimits, HttpOptions, HttpServer, Tokens},
};

/// The token of [`Server::with_token`].
pub const TOKEN: &str = "test-token-0123456789abcdef";

/// A server on a loopback port of its own, until dropped (or [`Server::stop`]).
pub struct Server {
    pub addr: SocketAddr,
    pub registry: Arc<Registry>,
    pub router: Arc<Router>,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
    _watch: toolhost::registry::WatchHandle,
    pub dirs: (tempfile::TempDir, tempfile::TempDir),
}

/// How a test server is set up.
pub struct Setup {
    pub libs: Vec<&'static str>,
    pub tokens: Option<Tokens>,
    pub limits: HttpLimits,
    pub allow_origins: Vec<String>,
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    pub router: RouterConfig,
    /// Plugin files built elsewhere (C-ABI plugins) served instead of `libs`.
    pub files: Vec<std::path::PathBuf>,
    /// Every plugin of `libs` in a worker process (`--isolate`).
    pub isolate: bool,
}

impl Setup {
    /// Serves copies of the plugin files `files` (see `super::plugin_dir_of`).
    pub fn of_files(files: &[&std::path::Path]) -> Self {
        Setup {
            files: files.iter().map(|f| f.to_path_buf()).collect(),
            ..Setup::new(&[])
        }
    }

    pub fn new(libs: &[&'static str]) -> Self {
        Setup {
            libs: libs.to_vec(),
            tokens: None,
            limits: HttpLimits::default(),
            allow_origins: Vec::new(),
            router: RouterConfig::default(),
            tls: None,
            files: Vec::new(),
            isolate: false,
        }
    }

    pub fn with_token(mut self) -> Self {
        self.tokens = Some(Tokens::from_list([TOKEN.to_string()]));
        self
    }

    pub async fn start(self) -> Server {
        let (router, dirs) = if self.isolate {
            super::open_isolated_router(&self.libs, self.router)
        } else if self.files.is_empty() {
            super::open_router(&self.libs, self.router)
        } else {
            let files: Vec<&std::path::Path> = self.files.iter().map(|f| f.as_path()).collect();
            super::open_router_of(&files, self.router)
        };
        let registry = router.registry().clone();
        let watch = registry.watch().expect("watch the plugin folder");
        let server = HttpServer::bind(
            HttpOptions {
                addr: "127.0.0.1:0".parse().unwrap(),
                tokens: self.tokens,
                allow_origins: self.allow_origins,
                limits: self.limits,
                tls: self.tls,
            },
            router.clone(),
        )
        .await
        .expect("bind");
        let addr = server.local_addr();
        let (stop, stopped) = oneshot::channel::<()>();
        let events = registry.subscribe();
        let done = tokio::spawn(server.serve(Some(events), async move {
            let _ = stopped.await;
        }));
        Server {
            addr,
            registry,
            router,
            stop: Some(stop),
            done: Some(done),
            _watch: watch,
            dirs,
        }
    }
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The plugin folder.
    pub fn plugin_dir(&self) -> &std::path::Path {
        self.dirs.0.path()
    }

    /// Asks the server to shut down, and waits (bounded) until it has.
    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(done) = self.done.take() {
            tokio::time::timeout(Duration::from_secs(30), done)
                .await
                .expect("the server stopped within 30 s")
                .expect("the server task ended normally");
        }
    }

    /// A request to this server with the headers every MCP client sends.
    pub fn post(&self, path: &str, body: &Value) -> Req {
        Req::new(self.addr, "POST", path)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
    }

    /// A 2026-07-28 request: `_meta` and the mirrored headers as the spec asks.
    pub fn modern(&self, path: &str, id: i64, method: &str, mut params: Value) -> Req {
        if params.is_null() {
            params = json!({});
        }
        let mut meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        if let Some(extra) = params["_meta"].as_object() {
            for (k, v) in extra {
                meta[k] = v.clone();
            }
        }
        params["_meta"] = meta;
        let name = params["name"].as_str().map(str::to_string);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut r = self
            .post(path, &body)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(n) = name {
            r = r.header("mcp-name", &n);
        }
        r
    }

    /// Opens a 2025-11-25 session on `path`; returns its id.
    pub async fn initialize(&self, path: &str) -> String {
        let r = self
            .post(
                path,
                &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                    "protocolVersion":"2025-11-25","capabilities":{},
                    "clientInfo":{"name":"test","version":"1"}}}),
            )
            .send()
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let id = r
            .header("mcp-session-id")
            .expect("a session id")
            .to_string();
        let n = self
            .post(
                path,
                &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            )
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await;
        assert_eq!(n.status, 202);
        id
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// A request being built.
pub struct Req {
    addr: SocketAddr,
    host: String,
    builder: hyper::http::request::Builder,
    body: String,
}

/// A whole response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON, or the last SSE event's data as JSON.
    pub fn json(&self) -> Value {
        match self.events().last() {
            Some(v) if self.is_stream() => v.clone(),
            _ => serde_json::from_str(&self.body)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body)),
        }
    }

    pub fn is_stream(&self) -> bool {
        self.header("content-type") == Some("text/event-stream")
    }

    /// The data of each SSE event, as JSON.
    pub fn events(&self) -> Vec<Value> {
        events_of(&self.body)
    }
}

/// The JSON data of each SSE event in `text`.
pub fn events_of(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("bad event {d}: {e}")))
        .collect()
}

impl Req {
    pub fn new(addr: SocketAddr, method: &str, path: &str) -> Self {
        Req {
            addr,
            host: addr.to_string(),
            builder: Request::builder().method(method).uri(path),
            body: String::new(),
        }
    }

    /// Sets a header, replacing one set before (`host` replaces the address connected to).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if name.eq_ignore_ascii_case("host") {
            self.host = value.to_string();
        } else if let Some(h) = self.builder.headers_mut() {
            h.insert(
                hyper::header::HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
                hyper::header::HeaderValue::from_str(value).expect("a header value"),
            );
        }
        self
    }

    /// Adds a header, keeping any of its name set before; its value may be any bytes a
    /// header value can carry on the wire (beyond ASCII too).
    pub fn append_header(mut self, name: &str, value: &[u8]) -> Self {
        if let Some(h) = self.builder.headers_mut() {
            h.append(
                hyper::header::HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
                hyper::header::HeaderValue::from_bytes(value).expect("a header value"),
            );
        }
        self
    }

    pub fn body(mut self, body: String) -> Self {
        self.body = body;
        self
    }

    /// Sends it and reads the response head; the body is left to read.
    pub async fn open(self) -> Response<Incoming> {
        let stream = tokio::net::TcpStream::connect(self.addr)
            .await
            .expect("connect");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(conn);
        let req = self
            .builder
            .header("host", self.host)
            .body(Full::new(Bytes::from(self.body)))
            .expect("a request");
        tokio::time::timeout(Duration::from_secs(30), sender.send_request(req))
            .await
            .expect("a response head within 30 s")
            .expect("a response")
    }

    /// Sends it over TLS (verified against `roots`, for `localhost`) and reads the whole
    /// response.
    pub async fn send_tls(
        self,
        roots: &[tokio_rustls::rustls::pki_types::CertificateDer<'static>],
    ) -> Reply {
        use tokio_rustls::rustls;
        let mut store = rustls::RootCertStore::empty();
        for c in roots {
            store.add(c.clone()).expect("a root");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(store)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = tokio::net::TcpStream::connect(self.addr)
            .await
            .expect("connect");
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let tls = connector.connect(name, tcp).await.expect("a TLS handshake");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .expect("handshake");
        tokio::spawn(conn);
        let req = self
            .builder
            .header("host", self.host)
            .body(Full::new(Bytes::from(self.body)))
            .expect("a request");
        let r = sender.send_request(req).await.expect("a response");
        Reply::read(r).await
    }

    /// Sends it and reads the whole response (30 s at most).
    pub async fn send(self) -> Reply {
        let r = self.open().await;
        Reply::read(r).await
    }
}

impl Reply {
    async fn read(r: Response<Incoming>) -> Reply {
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let body = tokio::time::timeout(Duration::from_secs(30), r.into_body().collect())
            .await
            .expect("the whole body within 30 s")
            .expect("a body")
            .to_bytes();
        Reply {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }
}

/// Reads a stream's body event by event.
pub struct Events {
    body: Incoming,
    buffer: String,
}

impl Events {
    pub fn new(r: Response<Incoming>) -> Self {
        Events {
            body: r.into_body(),
            buffer: String::new(),
        }
    }

    /// The next event (its id and JSON data), skipping comments; `None` at the end.
    pub async fn next(&mut self, within: Duration) -> Option<(Option<String>, Value)> {
        tokio::time::timeout(within, async {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let event: String = self.buffer.drain(..end + 2).collect();
                    let id = event
                        .lines()
                        .find_map(|l| l.strip_prefix("id: "))
                        .map(str::to_string);
                    if let Some(data) = event.lines().find_map(|l| l.strip_prefix("data: ")) {
                        return Some((id, serde_json::from_str(data).expect("JSON data")));
                    }
                    continue;
                }
                match self.body.frame().await {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            self.buffer.push_str(&String::from_utf8_lossy(&data));
                        }
                    }
                    _ => return None,
                }
            }
        })
        .await
        .expect("an event (or the end) within the time allowed")
    }
}
