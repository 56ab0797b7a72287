//! `toolhost serve`'s loop over in-memory pipes: one MCP server with every plugin's tools.

mod common;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolhost::{
    handler::{Router, RouterConfig},
    registry::{Registry, RegistryConfig},
    service::serve::serve,
    transport::read_lines,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn serves_all_plugins_as_one_server() {
    let plugins = common::plugin_dir(&["calc", "faulty"]);
    let shadow = common::shadow_dir();
    let mut config = RegistryConfig::new(plugins.path());
    config.shadow_dir = shadow.path().to_path_buf();
    let registry = Registry::open(config).unwrap();
    let router = Router::new(registry, RouterConfig::default());

    let (client, server) = tokio::io::duplex(1 << 20);
    let (s_in, s_out) = tokio::io::split(server);
    let served = tokio::spawn(serve(read_lines(s_in), s_out, router, None));
    let (c_in, mut c_out) = tokio::io::split(client);
    let requests = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"calc__add","arguments":{"x":2,"y":40}}}),
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"add","arguments":{}}}),
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"faulty__fail","arguments":{"message":"bad"}}}),
    ];
    for r in &requests {
        c_out.write_all(format!("{r}\n").as_bytes()).await.unwrap();
    }
    c_out.write_all(b"{oops\n").await.unwrap();
    // End of input: the server finishes the calls in flight, answers them, and stops.
    c_out.shutdown().await.unwrap();
    served.await.unwrap();

    let mut lines = BufReader::new(c_in).lines();
    let mut replies = Vec::new();
    while let Some(l) = lines.next_line().await.unwrap() {
        replies.push(serde_json::from_str::<Value>(&l).unwrap());
    }
    let by_id = |id: i64| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no reply {id} in {replies:?}"))
            .clone()
    };
    // The notification got no reply; the malformed line got a parse error.
    assert_eq!(replies.len(), 6, "{replies:?}");
    let init = by_id(1);
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "toolhost");
    let names: Vec<String> = by_id(2)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"calc__add".to_string()), "{names:?}");
    assert!(names.contains(&"faulty__slow".to_string()), "{names:?}");
    assert_eq!(by_id(3)["result"]["content"][0]["text"], "42");
    assert_eq!(by_id(4)["error"]["code"], -32602);
    assert_eq!(by_id(5)["result"]["isError"], true);
    let parse = replies.iter().find(|r| r["id"].is_null()).unwrap();
    assert_eq!(parse["error"]["code"], -32700);
}
