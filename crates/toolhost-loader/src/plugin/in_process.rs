//! The in-process backend: the plugin's library mapped into this process, its entry points
//! called through the ABI, and what it hands back checked and converted.

use std::{
    path::Path,
    sync::{Arc, OnceLock},
};

use abi_stable::std_types::{RResult, RStr, RString};
use serde_json::value::RawValue;
use toolhost_plugin::abi::{
    CallCtx, CallOutcome, ContentKind, PluginManifest, PluginRootRef, RequestErrorFfi,
};

use super::{
    callbacks::{call_ctx, host_api, CallData, LogSource},
    configure::{config_lookup, LookupData},
    library::{Library, Opened, Root},
    Annotations, Backend, CallControl, CallResult, ConfigSource, ContentOut, Events, Extras,
    LoadError, LoadedPlugin, Manifest, RequestError, StateError, ToolInfo,
};
use crate::model::{check_count, EmbeddedBody, ManifestError, MAX_DECLARATION_BYTES, MAX_TOOLS};

/// A library mapped into this process.
struct InProcess {
    root: PluginRootRef,
    /// The name the plugin declared, which its calls log under.
    name: String,
    // Closed after `root` is last used (in `Drop`), and before `log_source` is freed: the
    // plugin may log while unloading.
    library: Option<Library>,
    // What the plugin's `HostApi` points to. `None` once leaked along with a library that
    // stays mapped for a thread still running its code (see `Drop`).
    log_source: Option<Box<LogSource>>,
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(unload) = self.root.unload() {
            unload();
        }
        // Closes the library; nothing from it is referenced after this point.
        let kept = self.library.take().is_some_and(Library::close);
        if kept {
            // The library's code stays mapped (a thread still runs it, or thread-local
            // destructors will) and may log through its `HostApi`: the log source lives as
            // long as the process, like the library.
            std::mem::forget(self.log_source.take());
        }
    }
}

/// Runs the `init` (its `on_load`) of the library `opened`, a copy of `file` hashed `hash`,
/// handing it the `config` that `config` gives for the name it declares.
pub(super) fn init(
    file: &Path,
    hash: [u8; 32],
    opened: Opened,
    config: ConfigSource<'_>,
    events: Events,
) -> Result<Arc<LoadedPlugin>, LoadError> {
    let Opened {
        library,
        root,
        declared,
    } = opened;
    let declared = declared.as_deref();
    let started = match root {
        Root::Rust(root) => init_rust(file, library, root, declared, config, events)?,
        // The same seam, another backend: everything above it (reload, workers, limits) is
        // the same for both ABIs.
        Root::C(table) => super::c_abi::init(file, library, table, declared, config, events)?,
    };
    Ok(LoadedPlugin::with_backend(
        file,
        hash,
        started.manifest,
        started.config,
        started.backend,
        declared.is_some(),
    ))
}

/// What a library's `init` made: the manifest it declared, the `config` it was given, and
/// the backend that runs its code.
pub(crate) struct Started {
    pub manifest: Manifest,
    pub config: Option<String>,
    pub backend: Box<dyn Backend>,
}

/// [`init`] of a library of the Rust ABI (root `root`).
fn init_rust(
    file: &Path,
    library: Library,
    root: PluginRootRef,
    declared: Option<&str>,
    config: ConfigSource<'_>,
    events: Events,
) -> Result<Started, LoadError> {
    let log_source = Box::new(LogSource {
        file: file.display().to_string(),
        name: OnceLock::new(),
        // Absolute, so that it still names the file from another working directory.
        path: std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf()),
        events,
    });
    let host = host_api(&log_source);
    let mut plugin = InProcess {
        root,
        name: String::new(),
        library: Some(library),
        log_source: Some(log_source),
    };
    // From here on, dropping `plugin` runs the plugin's `unload` and closes the library.
    let lookup = LookupData { source: config };
    // Plugins built before `init_with_config` existed lack it: they get `init`.
    let with_config = plugin.root.init_with_config();
    let initialized = match with_config {
        Some(init) => init(host, &config_lookup(&lookup)),
        None => (plugin.root.init())(host),
    };
    let mut manifest = match initialized {
        RResult::ROk(m) => convert_manifest(m),
        RResult::RErr(e) => Err(LoadError::Init(e.into_string())),
    }?;
    if let Some(extras) = plugin.root.extras() {
        manifest.extras = convert_extras(&extras())?;
    }
    manifest.validate()?;
    super::declared::check(declared, &manifest)?;
    let given = config(&manifest.name);
    if with_config.is_none() && given.is_some() {
        return Err(LoadError::ConfigUnsupported {
            plugin: manifest.name,
        });
    }
    if let Some(src) = &plugin.log_source {
        let _ = src.name.set(manifest.name.clone());
    }
    plugin.name = manifest.name.clone();
    Ok(Started {
        manifest,
        config: given,
        backend: Box::new(plugin),
    })
}

impl InProcess {
    /// Runs `f` with the context a call hands the plugin; the context points at data on this
    /// stack frame, so it must not outlive `f`.
    fn with_ctx<R>(&self, control: &CallControl, f: impl FnOnce(&CallCtx) -> R) -> R {
        let data = CallData {
            control,
            plugin: &self.name,
        };
        f(&call_ctx(&data))
    }
}

impl Backend for InProcess {
    fn call(&self, tool: &str, args: &str, control: &CallControl) -> CallResult {
        self.with_ctx(control, |ctx| {
            // `outcome` holds plugin-allocated values: convert before `self` can be released.
            convert_outcome((self.root.call())(
                RStr::from_str(tool),
                RStr::from_str(args),
                ctx,
            ))
        })
    }

    fn has_call_typed(&self) -> bool {
        self.root.call_typed().is_some()
    }

    fn call_typed(&self, tool: &str, args: &str, control: &CallControl) -> Option<CallResult> {
        let call_typed = self.root.call_typed()?;
        self.with_ctx(control, |ctx| {
            let outcome = call_typed(RStr::from_str(tool), RStr::from_str(args), ctx);
            // Converted before `self` can be released, as in `call`.
            outcome.into_option().map(convert_outcome)
        })
    }

    fn request(
        &self,
        method: &str,
        params: &str,
        control: &CallControl,
    ) -> Result<String, RequestError> {
        let Some(request) = self.root.request() else {
            return Err(RequestError::new(
                crate::model::ErrorCode::METHOD_NOT_FOUND.to_i32(),
                format!(
                    "plugin {} was built against a toolhost-plugin that answers tool calls only",
                    self.name
                ),
            ));
        };
        self.with_ctx(control, |ctx| {
            // Converted before `self` can be released, as in `call`.
            convert_answer(request(RStr::from_str(method), RStr::from_str(params), ctx))
        })
    }

    fn save_state(&self) -> Option<Vec<u8>> {
        let save = self.root.save_state()?;
        save().into_option().map(|v| v.to_vec())
    }

    fn restore_state(&self, state: &[u8]) -> Result<(), StateError> {
        let Some(restore) = self.root.restore_state() else {
            return Err(StateError::Unsupported);
        };
        restore(state.into())
            .into_result()
            .map_err(|e| StateError::Refused(e.into_string()))
    }

    fn shadow_path(&self) -> &Path {
        self.library.as_ref().expect("open").shadow_path()
    }
}

fn parse_json(what: &'static str, tool: &str, text: &str) -> Result<serde_json::Value, LoadError> {
    serde_json::from_str(text).map_err(|source| LoadError::InvalidJson {
        tool: tool.to_string(),
        what,
        source,
    })
}
/// A string the plugin handed over, checked: the ABI types promise UTF-8, but nothing on the
/// plugin's side enforces it, and unchecked bytes would reach stdout as broken JSON.
fn checked(s: &RString) -> Option<String> {
    // SAFETY: an `RString`'s pointer and length describe its initialized buffer, which lives
    // as long as `s`; the bytes are only read, as bytes.
    let bytes = unsafe { std::slice::from_raw_parts(s.as_ptr(), s.len()) };
    std::str::from_utf8(bytes).ok().map(str::to_owned)
}

fn utf8(what: impl FnOnce() -> String, s: &RString) -> Result<String, LoadError> {
    checked(s).ok_or_else(|| LoadError::NotUtf8 { what: what() })
}

fn convert_manifest(m: PluginManifest) -> Result<Manifest, LoadError> {
    // Before anything is copied out of the plugin's list.
    check_count("tools", m.tools.len(), MAX_TOOLS)?;
    let opt = |s: &abi_stable::std_types::ROption<RString>| s.as_ref().map_or(0, |s| s.len());
    let bytes: usize = m.tools.iter().fold(
        m.name.len() + m.version.len() + m.description.len(),
        |sum, t| {
            sum + t.name.len()
                + t.description.len()
                + t.input_schema.len()
                + opt(&t.title)
                + opt(&t.output_schema)
                + opt(&t.meta)
        },
    );
    if bytes > MAX_DECLARATION_BYTES {
        return Err(ManifestError::TooLarge {
            what: "tool declarations",
            bytes,
        }
        .into());
    }
    let mut tools = Vec::with_capacity(m.tools.len());
    for (i, t) in m.tools.iter().enumerate() {
        let name = utf8(|| format!("the name of tool #{i}"), &t.name)?;
        let field = |what: &str, s: &RString| utf8(|| format!("tool `{name}`: {what}"), s);
        let meta = match t.meta.as_ref().into_option() {
            None => None,
            Some(text) => match parse_json("_meta", &name, &field("_meta", text)?)? {
                serde_json::Value::Object(o) => Some(o),
                _ => return Err(LoadError::MetaNotAnObject { tool: name }),
            },
        };
        tools.push(ToolInfo {
            title: match t.title.as_ref().into_option() {
                Some(s) => Some(field("the title", s)?),
                None => None,
            },
            description: field("the description", &t.description)?,
            input_schema: parse_json(
                "the input schema",
                &name,
                &field("the input schema", &t.input_schema)?,
            )?,
            output_schema: match t.output_schema.as_ref().into_option() {
                Some(s) => Some(parse_json(
                    "the output schema",
                    &name,
                    &field("the output schema", s)?,
                )?),
                None => None,
            },
            annotations: Annotations {
                read_only: t.annotations.read_only.into_option(),
                destructive: t.annotations.destructive.into_option(),
                idempotent: t.annotations.idempotent.into_option(),
                open_world: t.annotations.open_world.into_option(),
            },
            meta,
            name,
        });
    }
    Ok(Manifest {
        name: utf8(|| "the plugin name".into(), &m.name)?,
        version: utf8(|| "the version".into(), &m.version)?,
        description: utf8(|| "the description".into(), &m.description)?,
        tools,
        stateful: m.stateful,
        extras: Extras::default(),
    })
}

/// The declarations beyond tools, from the JSON text the ABI's `extras` returned.
fn convert_extras(text: &RString) -> Result<Extras, LoadError> {
    if text.len() > MAX_DECLARATION_BYTES {
        return Err(ManifestError::TooLarge {
            what: "declarations of resources, prompts and hooks",
            bytes: text.len(),
        }
        .into());
    }
    let text = checked(text).ok_or_else(|| LoadError::NotUtf8 {
        what: "the declarations of its resources, prompts and hooks".into(),
    })?;
    serde_json::from_str(&text).map_err(|e| LoadError::InvalidExtras(e.to_string()))
}

/// A request's answer, from what the ABI's `request` returned.
fn convert_answer(r: RResult<RString, RequestErrorFfi>) -> Result<String, RequestError> {
    const NOT_UTF8: &str = "the plugin answered with text that is not valid UTF-8";
    match r {
        RResult::ROk(text) => checked(&text).ok_or_else(|| RequestError::internal(NOT_UTF8)),
        RResult::RErr(e) => Err(RequestError::new(
            e.code,
            checked(&e.message).unwrap_or_else(|| NOT_UTF8.to_string()),
        )),
    }
}

fn convert_outcome(o: CallOutcome) -> CallResult {
    const NOT_UTF8: &str = "the plugin returned text that is not valid UTF-8";
    let mut content = Vec::with_capacity(o.content.len());
    for block in o.content.iter() {
        let (Some(data), Some(mime_type)) = (checked(&block.data), checked(&block.mime_type))
        else {
            return CallResult::error(NOT_UTF8);
        };
        content.push(match block.kind {
            ContentKind::TEXT => ContentOut::Text(data),
            ContentKind::IMAGE => ContentOut::Image { data, mime_type },
            ContentKind::AUDIO => ContentOut::Audio { data, mime_type },
            ContentKind::RESOURCE => match embedded_resource(&data) {
                Ok(resource) => resource,
                Err(why) => {
                    return CallResult::error(format!(
                        "the plugin returned an embedded resource that {why}"
                    ))
                }
            },
            ContentKind(other) => {
                return CallResult::error(format!(
                    "the plugin returned a content block of kind {other}, which this host does not know"
                ))
            }
        });
    }
    let structured = match o.structured.as_ref().into_option() {
        None => None,
        Some(text) => {
            let Some(text) = checked(text) else {
                return CallResult::error(NOT_UTF8);
            };
            match RawValue::from_string(text) {
                Ok(raw) if raw.get().trim_start().starts_with('{') => Some(raw),
                _ => {
                    return CallResult::error(
                        "the plugin returned structuredContent that is not a JSON object",
                    )
                }
            }
        }
    };
    CallResult {
        content,
        structured,
        is_error: o.is_error,
    }
}

/// An embedded resource from the `data` of its block: MCP's `resource` object, with a string
/// `uri`, an optional string `mimeType` and exactly one of a string `text` or `blob`. Other
/// members (`_meta`) are dropped. `Err` completes "an embedded resource that ...".
fn embedded_resource(data: &str) -> Result<ContentOut, String> {
    let Ok(serde_json::Value::Object(mut o)) = serde_json::from_str(data) else {
        return Err("is not a JSON object".into());
    };
    let mut string = |key: &str| match o.remove(key) {
        None => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("has a `{key}` that is not a string")),
    };
    let uri = string("uri")?.ok_or("has no `uri`")?;
    let mime_type = string("mimeType")?;
    let body = match (string("text")?, string("blob")?) {
        (Some(text), None) => EmbeddedBody::Text(text),
        (None, Some(blob)) => EmbeddedBody::Blob(blob),
        (Some(_), Some(_)) => return Err(format!("has both `text` and `blob` ({uri})")),
        (None, None) => return Err(format!("has neither `text` nor `blob` ({uri})")),
    };
    Ok(ContentOut::Resource {
        uri,
        mime_type,
        body,
    })
}

#[cfg(test)]
mod tests {
    use abi_stable::std_types::{RNone, RVec};
    use toolhost_plugin::abi::ContentBlock;

    use super::*;

    fn outcome(blocks: &[(ContentKind, &str)]) -> CallOutcome {
        CallOutcome {
            content: blocks
                .iter()
                .map(|(kind, data)| ContentBlock {
                    kind: *kind,
                    data: (*data).into(),
                    mime_type: RString::new(),
                })
                .collect::<RVec<_>>(),
            structured: RNone,
            is_error: false,
        }
    }

    fn resource(data: &str) -> CallResult {
        convert_outcome(outcome(&[
            (ContentKind::TEXT, "see"),
            (ContentKind::RESOURCE, data),
        ]))
    }

    #[test]
    fn embedded_resources_are_checked() {
        let good =
            resource(r##"{"uri":"notes://7","mimeType":"text/markdown","text":"# 7","_meta":{}}"##);
        assert!(!good.is_error);
        assert_eq!(
            good.content[1],
            ContentOut::Resource {
                uri: "notes://7".into(),
                mime_type: Some("text/markdown".into()),
                body: EmbeddedBody::Text("# 7".into()),
            }
        );
        let blob = resource(r#"{"uri":"mem://logo","blob":"/wA="}"#);
        assert_eq!(
            blob.content[1],
            ContentOut::Resource {
                uri: "mem://logo".into(),
                mime_type: None,
                body: EmbeddedBody::Blob("/wA=".into()),
            }
        );
        let refused = [
            ("[]", "is not a JSON object"),
            ("{", "is not a JSON object"),
            (r#"{"text":"t"}"#, "has no `uri`"),
            (
                r#"{"uri":7,"text":"t"}"#,
                "has a `uri` that is not a string",
            ),
            (
                r#"{"uri":"u","mimeType":null,"text":"t"}"#,
                "has a `mimeType` that is not a string",
            ),
            (
                r#"{"uri":"u","text":1}"#,
                "has a `text` that is not a string",
            ),
            (r#"{"uri":"u"}"#, "has neither `text` nor `blob` (u)"),
            (
                r#"{"uri":"u","text":"t","blob":"b"}"#,
                "has both `text` and `blob` (u)",
            ),
        ];
        for (data, why) in refused {
            let r = resource(data);
            assert!(r.is_error, "{data}");
            assert_eq!(
                r.text(),
                format!("the plugin returned an embedded resource that {why}"),
                "{data}"
            );
        }
        let unknown = convert_outcome(outcome(&[(ContentKind(4), "x")]));
        assert!(unknown.is_error);
        assert!(unknown.text().contains("kind 4"), "{}", unknown.text());
    }
}
