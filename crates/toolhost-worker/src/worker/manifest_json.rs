//! The payload of a worker's first frame: its [`Manifest`] as JSON, through the manifest's own
//! serde derives (once per worker start, so JSON's cost does not matter; schemas are JSON
//! values, which the frames' format cannot carry).

use serde::{Deserialize, Serialize};

use crate::plugin::Manifest;

/// The longest manifest JSON read from a worker: its tools' declarations and the others, each
/// at most [`MAX_DECLARATION_BYTES`](crate::model::MAX_DECLARATION_BYTES) as in process.
pub(crate) const MAX_MANIFEST_JSON: usize = 2 * crate::model::MAX_DECLARATION_BYTES;

/// What the worker sends and the host reads back: `manifest` is `&Manifest` on the way out.
#[derive(Serialize, Deserialize)]
struct Ready<M> {
    manifest: M,
    /// Whether the plugin has the ABI's typed parse (the host then lets it check arguments,
    /// as in process).
    call_typed: bool,
}

/// The manifest and whether the plugin has the ABI's typed parse, as the worker sends them.
pub fn to_json(manifest: &Manifest, call_typed: bool) -> String {
    serde_json::to_string(&Ready {
        manifest,
        call_typed,
    })
    .expect("a manifest (strings, JSON values with string keys, booleans) always serializes")
}

/// The manifest and whether the plugin has the ABI's typed parse, checked against the naming
/// rules again: the worker validated it, but the host relies on the rules itself.
pub(crate) fn from_json(text: &str) -> Result<(Manifest, bool), String> {
    use crate::model::ManifestError;
    if text.len() > MAX_MANIFEST_JSON {
        return Err(ManifestError::TooLarge {
            what: "declarations",
            bytes: text.len(),
        }
        .to_string());
    }
    let ready: Ready<Manifest> =
        serde_json::from_str(text).map_err(|e| format!("manifest: {e}"))?;
    ready.manifest.validate().map_err(|e| e.to_string())?;
    Ok((ready.manifest, ready.call_typed))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugin::{Annotations, ToolInfo};

    fn manifest(name: &str) -> Manifest {
        Manifest {
            name: name.into(),
            version: "1.2".into(),
            description: "d".into(),
            stateful: true,
            extras: serde_json::from_value(json!({
                "prompts": [{"name": "explain", "arguments": [{"name": "x", "required": true}]}],
                "hooks": [{"id": "guard", "event": "PreToolUse", "matcher": "Bash"}],
            }))
            .unwrap(),
            tools: vec![ToolInfo {
                name: "t".into(),
                title: Some("T".into()),
                description: "does".into(),
                input_schema: json!({"type":"object","properties":{"x":{"type":"number"}}}),
                output_schema: Some(json!({"type":"object"})),
                annotations: Annotations {
                    read_only: Some(true),
                    destructive: None,
                    idempotent: Some(false),
                    open_world: None,
                },
                meta: Some(json!({"k":1}).as_object().unwrap().clone()),
            }],
        }
    }

    #[test]
    fn manifests_round_trip() {
        let m = manifest("p");
        assert_eq!(from_json(&to_json(&m, true)).unwrap(), (m.clone(), true));
        assert_eq!(from_json(&to_json(&m, false)).unwrap(), (m.clone(), false));
        let mut bare = m;
        bare.tools[0].title = None;
        bare.tools[0].output_schema = None;
        bare.tools[0].meta = None;
        bare.extras = Default::default();
        assert_eq!(from_json(&to_json(&bare, false)).unwrap().0, bare);
    }

    #[test]
    fn the_host_checks_what_it_reads() {
        let e = from_json(&to_json(&manifest("p q"), false)).unwrap_err();
        assert!(e.contains("plugin name `p q`"), "{e}");
        let e = from_json(r#"{"manifest":{"name":"p"},"call_typed":false}"#).unwrap_err();
        assert!(e.starts_with("manifest: missing field"), "{e}");
    }
}
