//! Protocol types: the control envelope of the `claude` CLI, JSON-RPC messages, the MCP
//! results built from host-owned plugin data, and that data itself (a plugin's manifest and a
//! tool's result, as the host owns them once copied out of a library). Imports nothing from the
//! layers above it.
//!
//! Incoming lines are parsed once into borrowed views (`&RawValue` for the parts the host only
//! passes on): the shapes the CLI sends in one pass of our own (`scan`), anything else by
//! serde_json, to the same values and errors. A line too long to keep is read, as it streams
//! past, only for the keys that answering it needs (`keys`). Outgoing lines are serialized
//! straight into strings; a tool result by serde alone (`tool`), spliced into its reply as text.

mod control;
mod jsonrpc;
mod keys;
mod latest;
mod manifest;
mod mcp;
mod raw;
mod request;
mod result;
mod scan;
pub mod schema;
mod tool;

pub use control::{
    control_error, control_request, control_success, control_success_raw, mcp_message_request,
    ControlResponse, Incoming, IncomingRequest,
};
pub use jsonrpc::{
    id_key, rpc_error, rpc_error_data, rpc_notification, rpc_result, rpc_result_raw, ErrorCode,
    JsonRpc, NOTIFICATION_ACK,
};
pub use keys::{KeyReader, TopLevelKeys};
pub use latest::Latest;
pub use manifest::{
    check_count, check_name, Annotations, Extras, Manifest, ManifestError, RequestError, ToolInfo,
    MAX_DECLARATION_BYTES, MAX_PROMPTS, MAX_QUALIFIED_NAME, MAX_RESOURCES, MAX_TOOLS,
};
pub use mcp::{
    initialize_result, negotiate_version, CallMeta, CallParams, CancelledParams, InitializeParams,
    LogLevel, ProgressParams, ProtocolMeta, RequestHead, ServerInfo, MODERN_PROTOCOL_VERSION,
    SESSION_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
};
pub use request::{
    ClientMessage, ClientNotification, ClientRequest, Cursor, Family, GetPrompt, InvalidParams,
};
pub use result::{CallResult, ContentOut, EmbeddedBody};
// Public for the parse benchmark, which weighs it against serde_json's public way.
#[doc(hidden)]
pub use raw::borrow_raw;
pub use tool::{
    call_result_json, call_result_text, parse_call_result, tool_json, tool_json_of, CallResultJson,
};
/// RFC 6570 level-1 templates, matched by the host with the very code the SDK checks them
/// with at load.
pub use toolhost_plugin::uri_template::{TemplateError, UriTemplate};
