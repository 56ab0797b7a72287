//! MCP tasks (docs/design/talk-back.md §6): a call started as a task, polled, its result
//! fetched, cancelled, listed; the per-client bound, the time to live, a panicking tool, and
//! another client's task ids. Over stdio `serve` (2025-11-25), and over HTTP: sessions
//! (2025-11-25) and the 2026-07-28 extension `io.modelcontextprotocol/tasks`. The tools are
//! the conformance fixture's (`plugins/fixtures/conformance/src/tasks.rs`).

mod common;

use std::{sync::Arc, time::Duration};

use serde_json::{json, Value};
use toolhost::handler::{Router, RouterConfig, MAX_TASKS};

const WAIT: Duration = Duration::from_secs(30);

/// A scripted client of `toolhost serve` over `router` (2025-11-25).
type Client = common::stdio::Pipe;

impl Client {
    /// Starts serving `router`; returns the client and the `initialize` result.
    async fn start(router: Arc<Router>) -> (Self, Value) {
        let (c, init) = Client::open(router, false, json!({"elicitation":{}})).await;
        (c, init["result"].clone())
    }

    /// Calls `tool` as a task (`ttl` ms); returns the created task.
    async fn start_task(&mut self, tool: &str, args: Value, ttl: u64) -> Value {
        let reply = self
            .request(
                "tools/call",
                json!({"name": tool, "arguments": args, "task": {"ttl": ttl}}),
            )
            .await;
        reply["result"]["task"].clone()
    }

    async fn get(&mut self, task: &str) -> Value {
        self.request("tasks/get", json!({ "taskId": task })).await
    }

    /// Polls task `task` until it has ended; returns it.
    async fn until_ended(&mut self, task: &str) -> Value {
        for _ in 0..600 {
            let t = self.get(task).await["result"].clone();
            if ["completed", "failed", "cancelled"].contains(&t["status"].as_str().unwrap_or("")) {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("task {task} did not end");
    }
}

fn router() -> (Arc<Router>, (tempfile::TempDir, tempfile::TempDir)) {
    common::open_router(&["conformance"], RouterConfig::default())
}

/// A task is declared, started, polled, listed, and its result fetched once it ends
/// (`tasks/result` waits for it), naming the task in `_meta`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_starts_is_polled_and_gives_its_result() {
    let (router, _dirs) = router();
    let (mut c, init) = Client::start(router.clone()).await;
    assert_eq!(
        init["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{init}"
    );
    let list = c.request("tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let support = |name: &str| {
        let t = tools.iter().find(|t| t["name"] == name).unwrap();
        t["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("conformance__slow_compute"), "optional");
    assert_eq!(support("conformance__failing_job"), "required");
    assert_eq!(support("conformance__greet"), Value::Null);

    let task = c
        .start_task(
            "conformance__slow_compute",
            json!({"seconds": 1, "label": "x"}),
            60_000,
        )
        .await;
    let id = task["taskId"].as_str().expect("a task id").to_string();
    assert_eq!(task["status"], "working", "{task}");
    assert_eq!(task["ttl"], 60_000);
    assert!(task["pollInterval"].as_u64().unwrap() > 0);
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'), "{task}");
    assert_eq!(c.get(&id).await["result"]["taskId"], id.as_str());
    let listed = c.request("tasks/list", json!({})).await;
    assert_eq!(
        listed["result"]["tasks"][0]["taskId"],
        id.as_str(),
        "{listed}"
    );

    // Waits for the end, then gives the tool's result.
    let result = c.request("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(
        result["result"]["content"][0]["text"], "computed x after 1 s",
        "{result}"
    );
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    assert_eq!(c.get(&id).await["result"]["status"], "completed");

    // A tool that must be a task, called plainly, and a plain tool called as a task.
    let plain = c
        .request(
            "tools/call",
            json!({"name": "conformance__failing_job", "arguments": {}}),
        )
        .await;
    assert_eq!(plain["error"]["code"], -32601, "{plain}");
    let as_task = c
        .request(
            "tools/call",
            json!({"name": "conformance__greet", "arguments": {"name": "a"}, "task": {}}),
        )
        .await;
    assert_eq!(as_task["error"]["code"], -32601, "{as_task}");
    c.end().await;
}

/// `tasks/cancel` ends a running task `cancelled` and stops its tool; cancelling it again is
/// refused, and its `tasks/result` is an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_ends_cancelled() {
    let (router, _dirs) = router();
    let (mut c, _) = Client::start(router.clone()).await;
    let task = c
        .start_task("conformance__slow_compute", json!({"seconds": 60}), 60_000)
        .await;
    let id = task["taskId"].as_str().unwrap().to_string();
    let cancelled = c.request("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(c.get(&id).await["result"]["status"], "cancelled");
    let again = c.request("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    let result = c.request("tasks/result", json!({ "taskId": id })).await;
    assert!(
        result["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cancelled"),
        "{result}"
    );
    // The tool stopped: the host is idle again.
    tokio::time::timeout(WAIT, router.answered_all())
        .await
        .unwrap();
    c.end().await;
}

/// A client holds at most MAX_TASKS running tasks: the next call of a tool that must be a task
/// is refused, saying why, until one ends; then it starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_runs_at_most_32_tasks() {
    let (router, _dirs) = router();
    let (mut c, _) = Client::start(router.clone()).await;
    let mut ids = Vec::new();
    for _ in 0..MAX_TASKS {
        let task = c
            .start_task("conformance__slow_compute", json!({"seconds": 60}), 60_000)
            .await;
        ids.push(task["taskId"].as_str().expect("a task").to_string());
    }
    let refused = c
        .request(
            "tools/call",
            json!({"name": "conformance__failing_job", "arguments": {}, "task": {}}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too many tasks"),
        "{refused}"
    );
    assert_eq!(router.tasks().len(), MAX_TASKS);
    // One ends: room for one more (the ended one makes way).
    c.request("tasks/cancel", json!({"taskId": ids[0]})).await;
    let started = c
        .start_task("conformance__failing_job", json!({}), 60_000)
        .await;
    assert!(started["taskId"].is_string(), "{started}");
    assert_eq!(router.tasks().len(), MAX_TASKS);
    let gone = c.get(&ids[0]).await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    // The end of the session cancels and forgets them all.
    c.end().await;
    assert!(router.tasks().is_empty());
}

/// The time to live a client asks for is clamped to [1 s, 1 h], and a task that ended is
/// forgotten once it has passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_kept_for_its_time_to_live() {
    let (router, _dirs) = router();
    let (mut c, _) = Client::start(router.clone()).await;
    let long = c
        .start_task(
            "conformance__slow_compute",
            json!({"seconds": 0}),
            10_000_000_000,
        )
        .await;
    assert_eq!(long["ttl"], 3_600_000, "{long}");
    let short = c
        .start_task("conformance__slow_compute", json!({"seconds": 0}), 1)
        .await;
    assert_eq!(short["ttl"], 1000, "{short}");
    let id = short["taskId"].as_str().unwrap().to_string();
    assert_eq!(c.until_ended(&id).await["status"], "completed");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let gone = c.get(&id).await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    assert!(
        gone["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown task"),
        "{gone}"
    );
    // The one with an hour to live is still there.
    let kept = c.get(long["taskId"].as_str().unwrap()).await;
    assert_eq!(kept["result"]["status"], "completed", "{kept}");
    c.end().await;
}

/// A tool that panics ends its task `failed`, with the panic in the error; a tool that
/// returns an error ends `completed`, its error result kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_tool_fails_its_task() {
    let (router, _dirs) = router();
    let (mut c, _) = Client::start(router.clone()).await;
    let task = c
        .start_task("conformance__protocol_error_job", json!({}), 60_000)
        .await;
    let id = task["taskId"].as_str().unwrap().to_string();
    let ended = c.until_ended(&id).await;
    assert_eq!(ended["status"], "failed", "{ended}");
    assert!(
        ended["statusMessage"]
            .as_str()
            .unwrap()
            .contains("panicked"),
        "{ended}"
    );
    let result = c.request("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(result["error"]["code"], -32603, "{result}");
    assert!(result["error"]["message"]
        .as_str()
        .unwrap()
        .contains("panicked"));

    let job = c
        .start_task("conformance__failing_job", json!({}), 60_000)
        .await;
    let id = job["taskId"].as_str().unwrap().to_string();
    assert_eq!(c.until_ended(&id).await["status"], "completed");
    let result = c.request("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(result["result"]["isError"], true, "{result}");
    // Serving goes on.
    let greet = c
        .request(
            "tools/call",
            json!({"name": "conformance__greet", "arguments": {"name": "Bo"}}),
        )
        .await;
    assert_eq!(greet["result"]["content"][0]["text"], "Hello, Bo!");
    c.end().await;
}

/// Over HTTP, a session's task ids mean nothing in another session: polling, fetching or
/// cancelling one there is "unknown task", and the task goes on. Ending the session
/// (DELETE) cancels its tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_session_cannot_reach_a_task() {
    let server = common::http::Setup::new(&["conformance"]).start().await;
    let path = "/mcp/conformance";
    let owner = server.initialize(path).await;
    let attacker = server.initialize(path).await;
    let rpc = |session: &str, id: i64, method: &str, params: Value| {
        server
            .post(
                path,
                &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
            )
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
    };
    let created = rpc(
        &owner,
        1,
        "tools/call",
        json!({"name":"slow_compute","arguments":{"seconds":60},"task":{"ttl":60000}}),
    )
    .send()
    .await
    .json();
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    for (n, method) in ["tasks/get", "tasks/result", "tasks/cancel"]
        .iter()
        .enumerate()
    {
        let r = rpc(&attacker, 10 + n as i64, method, json!({ "taskId": id }))
            .send()
            .await
            .json();
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
        assert!(r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown task"));
    }
    let listed = rpc(&attacker, 20, "tasks/list", json!({}))
        .send()
        .await
        .json();
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    let mine = rpc(&owner, 2, "tasks/get", json!({ "taskId": id }))
        .send()
        .await
        .json();
    assert_eq!(mine["result"]["status"], "working", "{mine}");

    common::http::Req::new(server.addr, "DELETE", path)
        .header("mcp-session-id", &owner)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await;
    assert!(server.router.tasks().is_empty());
    tokio::time::timeout(WAIT, server.router.answered_all())
        .await
        .unwrap();
    server.stop().await;
}

/// The 2026-07-28 extension: a task-supporting tool called by a request declaring it gets the
/// flat `CreateTaskResult`; `tasks/get` names the questions the tool waits on, `tasks/update`
/// answers them, and the result comes inline; `Mcp-Name` must name the task; a tool that must
/// be a task is refused -32021 without the extension; `tasks/list` does not exist here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tasks_extension_over_http() {
    let server = common::http::Setup::new(&["conformance"]).start().await;
    let path = "/mcp/conformance";
    let ext = json!({"io.modelcontextprotocol/clientCapabilities":
        {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let task_req = |id: i64, method: &str, params: Value| {
        let task = params["taskId"].as_str().unwrap_or("").to_string();
        let mut p = params;
        p["_meta"] = ext.clone();
        server.modern(path, id, method, p).header("mcp-name", &task)
    };
    let discover = server
        .modern(path, 1, "server/discover", json!({}))
        .send()
        .await
        .json();
    let caps = &discover["result"]["capabilities"];
    assert_eq!(
        caps["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{discover}"
    );
    assert!(caps.get("tasks").is_none(), "{discover}");

    let created = server
        .modern(
            path,
            2,
            "tools/call",
            json!({"name": "confirm_delete", "arguments": {"filename": "a.txt"}, "_meta": ext}),
        )
        .send()
        .await
        .json();
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    assert!(
        result.get("task").is_none() && result.get("ttl").is_none(),
        "{created}"
    );
    let id = result["taskId"].as_str().unwrap().to_string();

    // The question shows once the tool asks.
    let mut asked = Value::Null;
    for n in 0..200 {
        asked = task_req(100 + n, "tasks/get", json!({ "taskId": id }))
            .send()
            .await
            .json();
        if asked["result"]["status"] == "input_required" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let requests = asked["result"]["inputRequests"]
        .as_object()
        .expect("questions")
        .clone();
    assert_eq!(requests.len(), 1, "{asked}");
    let (key, question) = requests.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create");

    // Mcp-Name must be the task's id.
    let wrong = task_req(3, "tasks/get", json!({ "taskId": id }))
        .header("mcp-name", "someone-else")
        .send()
        .await;
    assert_eq!(wrong.status, 400);
    assert_eq!(wrong.json()["error"]["code"], -32020);

    let ack = task_req(
        4,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key.clone(): {"action": "accept", "content": {"confirm": true}}}}),
    )
    .send()
    .await
    .json();
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let mut done = Value::Null;
    for n in 0..200 {
        done = task_req(200 + n, "tasks/get", json!({ "taskId": id }))
            .send()
            .await
            .json();
        if done["result"]["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "deleted a.txt",
        "{done}"
    );

    // Without the extension: a tool that must be a task is refused, naming it.
    let refused = server
        .modern(
            path,
            5,
            "tools/call",
            json!({"name": "failing_job", "arguments": {}}),
        )
        .send()
        .await
        .json();
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"]
            ["io.modelcontextprotocol/tasks"],
        json!({})
    );
    let list = task_req(6, "tasks/list", json!({})).send().await;
    assert_eq!(list.json()["error"]["code"], -32601);
    server.stop().await;
}

/// A task whose worker process crashes ends `failed`, saying so (not `completed` with the
/// error result a plain call gets); the plugin serves on in a new worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_worker_fails_its_task() {
    let (router, _dirs) = common::open_isolated_router(&["crashy"], RouterConfig::default());
    let (mut c, _) = Client::start(router.clone()).await;
    let task = c.start_task("crashy__abort", json!({}), 60_000).await;
    let id = task["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{task}"))
        .to_string();
    let ended = c.until_ended(&id).await;
    assert_eq!(ended["status"], "failed", "{ended}");
    let why = ended["statusMessage"].as_str().unwrap();
    assert!(
        why.contains("crashed") && why.contains("SIGABRT"),
        "{ended}"
    );
    let echo = c
        .request(
            "tools/call",
            json!({"name": "crashy__echo", "arguments": {"word": "on"}}),
        )
        .await;
    assert!(
        echo["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("on"),
        "{echo}"
    );
    c.end().await;
}

/// A task keeps running on the plugin version it started on: its plugin's file removed (the
/// plugin unloaded from the catalog) while it works, it still ends with its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_outlives_its_plugins_removal() {
    let (router, dirs) = router();
    let _watch = router.registry().watch().expect("watch the plugin folder");
    let (mut c, _) = Client::start(router.clone()).await;
    let task = c
        .start_task(
            "conformance__slow_compute",
            json!({"seconds": 5, "label": "old"}),
            60_000,
        )
        .await;
    let id = task["taskId"].as_str().unwrap().to_string();
    std::fs::remove_file(dirs.0.path().join(common::lib_file("conformance"))).unwrap();
    for _ in 0..400 {
        if router.registry().get("conformance").is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        router.registry().get("conformance").is_none(),
        "the plugin is still served"
    );
    assert_eq!(c.get(&id).await["result"]["status"], "working");
    let ended = c.until_ended(&id).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    let result = c.request("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(
        result["result"]["content"][0]["text"], "computed old after 5 s",
        "{result}"
    );
    c.end().await;
}

/// Over 2026-07-28 a client's tasks are its bearer token's: another token's request for the
/// task (get, update, cancel) is "unknown task", and the task goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_token_cannot_reach_a_task() {
    let (owner, other) = (
        "owner-token-0123456789abcdef",
        "other-token-0123456789abcdef",
    );
    let mut setup = common::http::Setup::new(&["conformance"]);
    setup.tokens = Some(toolhost::service::http::Tokens::from_list([
        owner.to_string(),
        other.to_string(),
    ]));
    let server = setup.start().await;
    let path = "/mcp/conformance";
    let meta = json!({"io.modelcontextprotocol/clientCapabilities":
        {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let bearer = |token: &str| format!("Bearer {token}");
    let created = server
        .modern(
            path,
            1,
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 60}, "_meta": meta}),
        )
        .header("authorization", &bearer(owner))
        .send()
        .await
        .json();
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    let as_token = |token: &str, n: i64, method: &str, mut params: Value| {
        params["taskId"] = json!(id);
        params["_meta"] = meta.clone();
        server
            .modern(path, n, method, params)
            .header("mcp-name", &id)
            .header("authorization", &bearer(token))
    };
    for (n, (method, params)) in [
        ("tasks/get", json!({})),
        ("tasks/update", json!({"inputResponses": {}})),
        ("tasks/cancel", json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        let r = as_token(other, 10 + n as i64, method, params)
            .send()
            .await
            .json();
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
        assert!(r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown task"));
    }
    let mine = as_token(owner, 20, "tasks/get", json!({}))
        .send()
        .await
        .json();
    assert_eq!(mine["result"]["status"], "working", "{mine}");
    let ack = as_token(owner, 21, "tasks/cancel", json!({}))
        .send()
        .await
        .json();
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    server.stop().await;
}

/// Over an HTTP session (2025-11-25), `tasks/result` waits for the task's end and answers
/// with its result; the session's `initialize` declares tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_fetches_a_task_result_over_http() {
    let server = common::http::Setup::new(&["conformance"]).start().await;
    let path = "/mcp/conformance";
    let session = server.initialize(path).await;
    let rpc = |id: i64, method: &str, params: Value| {
        server
            .post(
                path,
                &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
            )
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
    };
    let created = rpc(
        1,
        "tools/call",
        json!({"name":"slow_compute","arguments":{"seconds":1,"label":"h"},"task":{}}),
    )
    .send()
    .await
    .json();
    let task = &created["result"]["task"];
    assert_eq!(task["ttl"], 600_000, "{created}");
    let id = task["taskId"].as_str().unwrap().to_string();
    let result = rpc(2, "tasks/result", json!({ "taskId": id }))
        .send()
        .await
        .json();
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(
        result["result"]["content"][0]["text"],
        "computed h after 1 s"
    );
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    server.stop().await;
}

/// A task tool that asks first (`#[tool(task = "required", ask_first)]`) asks in rounds, with
/// no task: the retried round with the answer is answered with the task (its
/// `ctx.start_task()`), which completes with the answer gathered before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_first_tool_asks_in_rounds_then_becomes_a_task() {
    let server = common::http::Setup::new(&["conformance"]).start().await;
    let path = "/mcp/conformance";
    let ext = json!({"io.modelcontextprotocol/clientCapabilities":
        {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let call = |id: i64, extra: Value| {
        let mut p = json!({"name": "test_tool_with_task", "arguments": {}, "_meta": ext});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        server.modern(path, id, "tools/call", p)
    };
    let round1 = call(1, json!({})).send().await.json();
    let r1 = &round1["result"];
    assert_eq!(r1["resultType"], "input_required", "{round1}");
    assert!(r1.get("taskId").is_none(), "{round1}");
    let (key, question) = r1["inputRequests"]
        .as_object()
        .expect("questions")
        .iter()
        .next()
        .map(|(k, q)| (k.clone(), q.clone()))
        .unwrap();
    assert_eq!(question["method"], "elicitation/create", "{round1}");
    // No task was made for the first round.
    assert_eq!(server.router.tasks().len(), 0);

    let answer = json!({"action": "accept", "content": {"name": "Alice"}});
    let round2 = call(
        2,
        json!({"inputResponses": {key: answer}, "requestState": r1["requestState"]}),
    )
    .send()
    .await
    .json();
    let r2 = &round2["result"];
    assert_eq!(r2["resultType"], "task", "{round2}");
    for absent in ["requestState", "inputRequests", "content"] {
        assert!(r2.get(absent).is_none(), "{absent}: {round2}");
    }
    let id = r2["taskId"].as_str().expect("a task id").to_string();
    let mut done = Value::Null;
    for n in 0..400 {
        let mut p = json!({ "taskId": id });
        p["_meta"] = ext.clone();
        done = server
            .modern(path, 100 + n, "tasks/get", p)
            .header("mcp-name", &id)
            .send()
            .await
            .json();
        if done["result"]["status"] != "working" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "Hello, Alice!",
        "{done}"
    );
    server.stop().await;
}

/// An ask-first tool whose run ends without `ctx.start_task()` (the question declined) is
/// answered its result at once, with no task; without the extension, a required one is still
/// refused with -32021.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_first_tool_that_never_starts_its_task_answers_inline() {
    let server = common::http::Setup::new(&["conformance"]).start().await;
    let path = "/mcp/conformance";
    let ext = json!({"io.modelcontextprotocol/clientCapabilities":
        {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let params = json!({"name": "test_tool_with_task", "arguments": {}, "_meta": ext,
        "inputResponses": {"ask": {"action": "decline"}}});
    let reply = server
        .modern(path, 1, "tools/call", params)
        .send()
        .await
        .json();
    let result = &reply["result"];
    assert_eq!(result["resultType"], "complete", "{reply}");
    assert_eq!(
        result["content"][0]["text"], "Hello, whoever you are!",
        "{reply}"
    );
    assert_eq!(server.router.tasks().len(), 0);

    let without = json!({"name": "test_tool_with_task", "arguments": {},
        "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
    let refused = server
        .modern(path, 2, "tools/call", without)
        .send()
        .await
        .json();
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    server.stop().await;
}

/// Issue 37, item 3: a task cancelled while it waits for a call slot never starts. With the
/// plugin's one slot held, 8 tasks of a tool that leaves a trace of each run are created
/// and cancelled: `tasks/get` says `cancelled`, and once the slot frees none of them runs (a
/// task created after them, not cancelled, runs: the queue was drained past them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_while_it_waits_for_a_slot_never_runs() {
    let config = RouterConfig {
        executor: toolhost::executor::ExecutorConfig {
            per_plugin: 1,
            ..Default::default()
        },
        ..RouterConfig::default()
    };
    let (router, _dirs) = common::open_router(&["asker"], config);
    let (mut c, _) = Client::start(router.clone()).await;
    let traces = tempfile::tempdir().unwrap();
    let trace = |name: &str| traces.path().join(name).to_string_lossy().into_owned();
    let holder = c
        .start_task(
            "asker__mark",
            json!({"path": trace("holder"), "seconds": 60}),
            60_000,
        )
        .await;
    let holder = holder["taskId"].as_str().unwrap().to_string();
    // The holder runs (its trace is written) and holds the one slot.
    for _ in 0..400 {
        if std::path::Path::new(&trace("holder")).exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(std::path::Path::new(&trace("holder")).exists());
    let mut cancelled = Vec::new();
    for _ in 0..8 {
        let t = c
            .start_task(
                "asker__mark",
                json!({"path": trace("cancelled"), "seconds": 0}),
                60_000,
            )
            .await;
        let id = t["taskId"].as_str().unwrap().to_string();
        let r = c.request("tasks/cancel", json!({ "taskId": id })).await;
        assert_eq!(r["result"]["status"], "cancelled", "{r}");
        cancelled.push(id);
    }
    let after = c
        .start_task(
            "asker__mark",
            json!({"path": trace("after"), "seconds": 0}),
            60_000,
        )
        .await;
    let after = after["taskId"].as_str().unwrap().to_string();
    // The slot frees: the queue runs in order, so the last task ends after the cancelled ones
    // left it.
    c.request("tasks/cancel", json!({ "taskId": holder })).await;
    assert_eq!(c.until_ended(&after).await["status"], "completed");
    for id in &cancelled {
        assert_eq!(c.get(id).await["result"]["status"], "cancelled");
    }
    let ran = std::fs::read_to_string(trace("cancelled")).unwrap_or_default();
    assert_eq!(
        ran.lines().count(),
        0,
        "cancelled tasks ran once the slot freed"
    );
    assert_eq!(std::fs::read_to_string(trace("after")).unwrap(), "ran\n");
    c.end().await;
}

/// A 2025-11-25 HTTP session as the `initialize` of `capabilities` opens it; its id.
async fn session_declaring(
    server: &common::http::Server,
    path: &str,
    capabilities: Value,
) -> String {
    let r = server
        .post(
            path,
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":capabilities,
                "clientInfo":{"name":"test","version":"1"}}}),
        )
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.header("mcp-session-id").expect("a session").to_string()
}

/// Two 2025-11-25 sessions of `server` on `path`, and what the tests do in them.
struct Sessions<'s> {
    server: &'s common::http::Server,
    path: &'static str,
    a: String,
    b: String,
}

impl<'s> Sessions<'s> {
    async fn open(server: &'s common::http::Server, path: &'static str) -> Self {
        Sessions {
            server,
            path,
            a: server.initialize(path).await,
            b: server.initialize(path).await,
        }
    }

    /// Request `method` in session `session`; its reply.
    async fn rpc(&self, session: &str, id: i64, method: &str, params: Value) -> Value {
        self.server
            .post(
                self.path,
                &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
            )
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .json()
    }

    /// Calls `tool` as a task in `session`; the task's id.
    async fn task(&self, session: &str, tool: &str, args: Value) -> String {
        let created = self
            .rpc(
                session,
                1,
                "tools/call",
                json!({"name": tool, "arguments": args, "task": {"ttl": 600_000}}),
            )
            .await;
        created["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("{created}"))
            .to_string()
    }

    /// Polls task `task` of `session` until it has ended; its status.
    async fn until_ended(&self, session: &str, task: &str) -> Value {
        for _ in 0..400 {
            let t = self
                .rpc(session, 2, "tasks/get", json!({ "taskId": task }))
                .await;
            if !["working", "input_required"]
                .contains(&t["result"]["status"].as_str().unwrap_or(""))
            {
                return t["result"]["status"].clone();
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("task {task} did not end");
    }
}

/// Issue 37, item 4: the tasks kept are bounded over every client, not only per client. With
/// room for 4 tasks in the process, two sessions' running tasks fill it (neither session has
/// its 32): the next task of either is refused, naming the server's bound; one ending makes
/// room, and the oldest finished task (of the other session) is the one forgotten for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_tasks_are_bounded_in_number_over_every_client() {
    let mut setup = common::http::Setup::new(&["conformance"]);
    setup.router.tasks = toolhost::handler::TaskLimits {
        max_tasks: 4,
        ..Default::default()
    };
    let server = setup.start().await;
    let s = Sessions::open(&server, "/mcp/conformance").await;
    let slow = json!({"seconds": 60});
    let mut running = Vec::new();
    for _ in 0..3 {
        running.push(s.task(&s.a, "slow_compute", slow.clone()).await);
    }
    let b_running = s.task(&s.b, "slow_compute", slow.clone()).await;
    assert_eq!(server.router.tasks().len(), 4);
    let required = json!({"name": "failing_job", "arguments": {}, "task": {}});
    for session in [&s.a, &s.b] {
        let refused = s.rpc(session, 3, "tools/call", required.clone()).await;
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("bound of 4 tasks"),
            "a fifth task was made: {refused}"
        );
    }
    assert_eq!(server.router.tasks().len(), 4);
    // B's task ends: A's next task takes its room, and B's is forgotten.
    s.rpc(&s.b, 4, "tasks/cancel", json!({ "taskId": b_running }))
        .await;
    s.task(&s.a, "failing_job", json!({})).await;
    let gone = s
        .rpc(&s.b, 5, "tasks/get", json!({ "taskId": b_running }))
        .await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    assert_eq!(server.router.tasks().len(), 4);
    for id in &running {
        assert_eq!(
            s.rpc(&s.a, 6, "tasks/get", json!({ "taskId": id })).await["result"]["status"],
            "working"
        );
    }
    server.stop().await;
}

/// Issue 37, item 4: finished results are bounded in bytes over every client: past the bound
/// the oldest finished results go, whichever session they are of, and the bytes kept never
/// pass it. Each result here is about 300 bytes: five do not fit in 1000.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_task_results_are_bounded_in_bytes_over_every_client() {
    const MAX_BYTES: usize = 1000;
    let mut setup = common::http::Setup::new(&["conformance"]);
    setup.router.tasks = toolhost::handler::TaskLimits {
        max_bytes: MAX_BYTES,
        ..Default::default()
    };
    let server = setup.start().await;
    let s = Sessions::open(&server, "/mcp/conformance").await;
    let label = "x".repeat(250);
    let mut done = Vec::new();
    for session in [&s.a, &s.a, &s.b, &s.b, &s.b] {
        let id = s
            .task(
                session,
                "slow_compute",
                json!({"seconds": 0, "label": label}),
            )
            .await;
        assert_eq!(s.until_ended(session, &id).await, "completed");
        let kept = server.router.tasks().kept_bytes();
        assert!(kept <= MAX_BYTES, "{kept} bytes of results kept");
        done.push((session.clone(), id));
    }
    let (first_session, first) = &done[0];
    let gone = s
        .rpc(first_session, 7, "tasks/get", json!({ "taskId": first }))
        .await;
    assert_eq!(
        gone["error"]["code"], -32602,
        "the oldest result is kept: {gone}"
    );
    let (last_session, last) = &done[4];
    let kept = s
        .rpc(last_session, 8, "tasks/result", json!({ "taskId": last }))
        .await;
    assert!(
        kept["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains(&label)),
        "{kept}"
    );
    assert!(server.router.tasks().kept_bytes() > 0);
    server.stop().await;
}

/// Issue 37, item 8: a question asked inside a 2025-11-25 HTTP session's task goes on the
/// session's GET stream (the POST that made the task was answered with it at once), naming
/// its task; the task says `input_required` meanwhile, and the client's response, POSTed in
/// the session, reaches the tool. With no GET stream open, the tool is told at once that it
/// cannot ask (its task ends rather than waiting for its timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_tasks_question_goes_on_the_get_stream() {
    let server = common::http::Setup::new(&["conformance"]).start().await;
    let path = "/mcp/conformance";
    let session = session_declaring(&server, path, json!({"elicitation": {}})).await;
    let rpc = |id: i64, body: Value| {
        let mut body = body;
        body["jsonrpc"] = json!("2.0");
        if id >= 0 {
            body["id"] = json!(id);
        }
        server
            .post(path, &body)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
    };
    let call = json!({"method": "tools/call", "params": {"name": "confirm_delete",
        "arguments": {"filename": "a.txt"}, "task": {}}});

    // No GET stream: told at once.
    let created = rpc(1, call.clone()).send().await.json();
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    let result = tokio::time::timeout(
        WAIT,
        rpc(
            2,
            json!({"method": "tasks/result", "params": {"taskId": id}}),
        )
        .send(),
    )
    .await
    .expect("the task ends without a GET stream")
    .json();
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("GET stream"), "{result}");

    // With the GET stream open, the question goes there.
    let get = common::http::Req::new(server.addr, "GET", path)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25");
    let mut heard = common::http::Events::new(get.open().await);
    let created = rpc(3, call).send().await.json();
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    let (_, ask) = heard
        .next(WAIT)
        .await
        .expect("the question on the GET stream");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str(),
        "{ask}"
    );
    let status = rpc(4, json!({"method": "tasks/get", "params": {"taskId": id}}))
        .send()
        .await
        .json();
    assert_eq!(status["result"]["status"], "input_required", "{status}");
    let answered = rpc(
        -1,
        json!({"id": ask["id"], "result": {"action": "accept", "content": {"confirm": true}}}),
    )
    .send()
    .await;
    assert_eq!(answered.status, 202, "{}", answered.body);
    let result = rpc(
        5,
        json!({"method": "tasks/result", "params": {"taskId": id}}),
    )
    .send()
    .await
    .json();
    assert_eq!(
        result["result"]["content"][0]["text"], "deleted a.txt",
        "{result}"
    );
    assert_eq!(server.router.asks().waiting(), 0);
    server.stop().await;
}

/// Issue 37, item 7: an ask-first tool that goes on without the answer to its question and
/// calls `ctx.start_task()` makes no task: the request is answered `input_required` (the open
/// question wins), and a task made then would be one the client never hears of, left to fill
/// its slots. Sent again with the answer, the same call makes its task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_first_tool_makes_no_task_while_its_question_is_open() {
    let server = common::http::Setup::new(&["asker"]).start().await;
    let path = "/mcp/asker";
    let ext = json!({"io.modelcontextprotocol/clientCapabilities":
        {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let call = |id: i64, extra: Value| {
        let mut p = json!({"name": "stubborn", "arguments": {}, "_meta": ext});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        server.modern(path, id, "tools/call", p)
    };
    let mut round = Value::Null;
    for n in 0..3 {
        round = call(n, json!({})).send().await.json();
        assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    }
    assert_eq!(
        server.router.tasks().len(),
        0,
        "tasks the client never heard of were made"
    );
    let r = &round["result"];
    let key = r["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let answer = json!({"action": "accept", "content": {"name": "Ann"}});
    let again = call(
        9,
        json!({"inputResponses": {key: answer}, "requestState": r["requestState"]}),
    )
    .send()
    .await
    .json();
    assert_eq!(again["result"]["resultType"], "task", "{again}");
    assert_eq!(server.router.tasks().len(), 1);
    server.stop().await;
}

/// Over stdio a 2025-11-25 task's question goes to the client on its one stream, as any
/// question of the session: it names its task in `_meta`, the task is `input_required` until
/// the answer comes, and the answer reaches the tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_tasks_question_names_its_task() {
    let (router, _dirs) = router();
    let (mut c, _) = Client::start(router.clone()).await;
    let mut seen = Vec::new();
    let created = c
        .request_seeing(
            "tools/call",
            json!({"name": "conformance__confirm_delete", "arguments": {"filename": "b.txt"},
                "task": {}}),
            &mut seen,
        )
        .await;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    let ask = match seen.pop() {
        Some(ask) => ask,
        None => c.next().await,
    };
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str(),
        "{ask}"
    );
    assert_eq!(c.get(&id).await["result"]["status"], "input_required");
    c.send(json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"confirm": true}}}))
        .await;
    let result = c.request("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(
        result["result"]["content"][0]["text"], "deleted b.txt",
        "{result}"
    );
    assert_eq!(c.get(&id).await["result"]["status"], "completed");
    c.end().await;
}
