//! What a tool returns, and how ordinary Rust values become MCP tool results.

use std::{convert::Infallible, fmt::Display};

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

use crate::resource::ResourceBody;

/// A JSON object, the only shape MCP's `structuredContent` may take (see [`ToolResult`]).
pub type JsonObject = serde_json::Map<String, Value>;

/// One block of a tool result's `content` (or of a [`PromptMessage`](crate::PromptMessage)).
/// Build one with its constructors, which base64-encode bytes for you; a tool returns one
/// bare, or several in a [`ToolResult`].
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::{json, TestContext}, ResourceBody};
///
/// /// Render the chart.
/// #[tool]
/// fn chart() -> Content {
///     Content::image(&[0x89, b'P', b'N', b'G'], "image/png")
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let r = chart::tool().call(json!({}), &TestContext::new());
/// assert_eq!(r.content, [Content::Image { data: "iVBORw==".into(), mime_type: "image/png".into() }]);
///
/// assert_eq!(Content::text("hi"), Content::Text("hi".into()));
/// let beep = Content::audio(b"RIFF", "audio/wav");
/// assert!(matches!(beep, Content::Audio { ref data, .. } if data == "UklGRg=="));
///
/// let note = Content::resource_text("notes://7", "text/markdown", "# Seven");
/// assert_eq!(note, Content::Resource {
///     uri: "notes://7".into(),
///     mime_type: Some("text/markdown".into()),
///     body: ResourceBody::Text("# Seven".into()),
/// });
/// let logo = Content::resource_blob("mem://logo", "image/png", [0x89, b'P']);
/// assert!(matches!(logo, Content::Resource { body: ResourceBody::Blob(ref b), .. } if b == &[0x89, b'P']));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// An image, base64-encoded.
    Image {
        /// The image's bytes, base64-encoded.
        data: String,
        /// Its MIME type (`image/png`).
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// The audio's bytes, base64-encoded.
        data: String,
        /// Its MIME type (`audio/wav`).
        mime_type: String,
    },
    /// A resource's contents sent along (MCP `EmbeddedResource`): the client gets the data
    /// without a `resources/read` of its own, named by `uri`.
    Resource {
        /// The URI naming the contents.
        uri: String,
        /// Its MIME type, if known.
        mime_type: Option<String>,
        /// Its text or bytes (raw: the host base64-encodes a blob).
        body: ResourceBody,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(text.into())
    }

    /// An image block from raw bytes (`mime_type` such as `image/png`).
    pub fn image(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Content::Image {
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        }
    }

    /// An audio block from raw bytes (`mime_type` such as `audio/wav`).
    pub fn audio(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Content::Audio {
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        }
    }

    /// An embedded resource of text (`mime_type` such as `text/markdown`).
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Content::Resource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Text(text.into()),
        }
    }

    /// An embedded resource of bytes, sent base64-encoded as its `blob`.
    pub fn resource_blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: impl Into<Vec<u8>>,
    ) -> Self {
        Content::Resource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Blob(bytes.into()),
        }
    }
}

/// A complete tool result: content blocks, optional `structuredContent`, and the error flag.
///
/// Most tools never build one by hand: return `Result<T, E>` and let [`IntoToolResult`] do it.
/// Build one for images, audio, several blocks, or text and structured data that differ.
///
/// ```
/// use serde_json::json;
/// use toolhost_plugin::{Content, JsonObject, ToolResult};
///
/// // A chart as an image, with a line of text for the model.
/// let png = [0x89, b'P', b'N', b'G'];
/// let chart = ToolResult::text("Sales rose 4% in May.").with(Content::image(&png, "image/png"));
/// assert_eq!(chart.content.len(), 2);
/// assert!(!chart.is_error);
///
/// // Any `Serialize` value: objects become JSON text plus `structuredContent`.
/// let stats = ToolResult::json(&json!({"words": 3}));
/// assert_eq!(stats.content, [Content::text(r#"{"words":3}"#)]);
/// let object: JsonObject = json!({"words": 3}).as_object().unwrap().clone();
/// assert_eq!(stats.structured, Some(object.clone()));
///
/// // A short summary as text, the full data as structured content.
/// let custom = ToolResult::text("3 words").with_structured(object);
/// assert_eq!(custom.structured.unwrap()["words"], 3);
///
/// // An error result: the model sees the message, with `isError: true`.
/// let failed = ToolResult::error("no such file: notes.txt");
/// assert!(failed.is_error);
///
/// // An image alone.
/// let logo = ToolResult::image(&png, "image/png");
/// assert!(matches!(&logo.content[0], Content::Image { mime_type, .. } if mime_type == "image/png"));
/// ```
///
/// In a tool, and in its test:
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::{json, TestContext}};
///
/// /// Plot the numbers.
/// #[tool]
/// fn plot(
///     /// The values to plot.
///     values: Vec<f64>,
/// ) -> ToolResult {
///     if values.is_empty() {
///         return ToolResult::error("nothing to plot");
///     }
///     ToolResult::text(format!("{} points", values.len())).with(Content::image(&[0x89], "image/png"))
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let ctx = TestContext::new();
/// let r = plot::tool().call(json!({"values": [1, 2]}), &ctx);
/// assert_eq!(r.content[0], Content::text("2 points"));
/// assert_eq!(plot::tool().call(json!({"values": []}), &ctx), ToolResult::error("nothing to plot"));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolResult {
    /// The blocks the client shows (and the model reads, unless `structured` is there).
    pub content: Vec<Content>,
    /// `structuredContent`; when present the model sees it instead of the text content.
    pub structured: Option<JsonObject>,
    /// `isError`: the tool failed; the model reads `content` as the error.
    pub is_error: bool,
}

impl ToolResult {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![Content::text(text)],
            ..Default::default()
        }
    }

    /// An error result (`isError: true`) with one text block.
    pub fn error(message: impl Into<String>) -> Self {
        ToolResult {
            content: vec![Content::text(message)],
            structured: None,
            is_error: true,
        }
    }

    /// A successful result holding `value` as `structuredContent` and as JSON text.
    ///
    /// Non-object values have no `structuredContent` form in MCP, so they become text only.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Self {
        // Numbers, strings and the like become their text straight away; only other values
        // go through a `serde_json::Value` (this runs for every call of most tools).
        match value.serialize(scalar::Probe) {
            Ok(scalar::Scalar::Text(text)) => ToolResult::text(text),
            Ok(scalar::Scalar::Nothing) => ToolResult::default(),
            Err(scalar::NotScalar) => Self::json_value(value),
        }
    }

    /// [`ToolResult::json`] through a `serde_json::Value`, for any value.
    fn json_value<T: Serialize + ?Sized>(value: &T) -> Self {
        match serde_json::to_value(value) {
            Ok(value) => Self::from_value(value),
            Err(e) => Self::error(format!("could not serialize the tool's result: {e}")),
        }
    }

    /// A successful result with one image block from raw bytes.
    pub fn image(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        ToolResult {
            content: vec![Content::image(bytes, mime_type)],
            ..Default::default()
        }
    }

    /// Sets `structuredContent`. MCP asks tools that return it to send the same data as text
    /// too, for clients that only read `content`; [`ToolResult::json`] does both.
    pub fn with_structured(mut self, object: JsonObject) -> Self {
        self.structured = Some(object);
        self
    }

    /// Appends a content block.
    pub fn with(mut self, block: Content) -> Self {
        self.content.push(block);
        self
    }

    fn from_value(value: Value) -> Self {
        match value {
            Value::Null => ToolResult::default(),
            Value::String(s) => ToolResult::text(s),
            Value::Number(n) => ToolResult::text(number_text(&n)),
            Value::Object(object) => ToolResult {
                content: vec![Content::Text(value_text(&object))],
                structured: Some(object),
                is_error: false,
            },
            other => ToolResult::text(other.to_string()),
        }
    }
}

fn value_text(object: &JsonObject) -> String {
    // Serializing a map of `Value`s cannot fail: its keys are strings.
    serde_json::to_string(object).unwrap_or_default()
}

/// Whole floats print without a trailing `.0` (`5`, not `5.0`): that is what a person expects
/// from `add 2 3`, and the model reads it the same way.
fn number_text(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() => float_text(f),
        _ => n.to_string(),
    }
}

/// [`number_text`] of a finite float.
fn float_text(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        // Exactly an integer of at most 15 digits: printed as one (Rust's float formatting
        // prints the same digits, at several times the cost); `-0` keeps its sign.
        if f == 0.0 && f.is_sign_negative() {
            return "-0".into();
        }
        return (f as i64).to_string();
    }
    serde_json::Number::from_f64(f).map_or_else(String::new, |n| n.to_string())
}

// Recognizes the values `ToolResult::json` turns into text without a `serde_json::Value`.
#[doc(hidden)]
pub mod returned;
mod scalar;

/// A value a tool can return inside `Ok(..)`.
///
/// Every `Serialize` type is one: strings become text, numbers and booleans their JSON text,
/// objects JSON text plus `structuredContent`, `()` an empty result. [`ToolResult`] and
/// [`Content`] pass through as they are. So a type of your own needs no wrapper in a `Result`.
///
/// ```
/// use serde::Serialize;
/// use toolhost_plugin::{prelude::*, testing::{json, TestContext}, IntoToolOutput};
///
/// #[derive(Serialize)]
/// pub struct Weather {
///     celsius: f64,
/// }
///
/// /// The weather in a city.
/// #[tool]
/// fn weather(city: String) -> Result<Weather, String> {
///     if city == "Atlantis" {
///         return Err("no weather under water".into());
///     }
///     Ok(Weather { celsius: 21.5 })
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let r = weather::tool().call(json!({"city": "Oslo"}), &TestContext::new());
/// assert_eq!(r.structured.unwrap()["celsius"], 21.5);
/// let r = weather::tool().call(json!({"city": "Atlantis"}), &TestContext::new());
/// assert_eq!(r, ToolResult::error("no weather under water"));
///
/// assert_eq!("hi".into_tool_output(), ToolResult::text("hi"));
/// assert_eq!(true.into_tool_output(), ToolResult::text("true"));
/// assert_eq!(().into_tool_output(), ToolResult::default());
/// assert_eq!(Content::text("x").into_tool_output(), ToolResult::text("x"));
/// # }
/// ```
pub trait IntoToolOutput {
    /// The successful result of this value.
    fn into_tool_output(self) -> ToolResult;
}

impl<T: Serialize> IntoToolOutput for T {
    fn into_tool_output(self) -> ToolResult {
        ToolResult::json(&self)
    }
}

impl IntoToolOutput for ToolResult {
    fn into_tool_output(self) -> ToolResult {
        self
    }
}

impl IntoToolOutput for Content {
    fn into_tool_output(self) -> ToolResult {
        ToolResult {
            content: vec![self],
            ..Default::default()
        }
    }
}

/// The return type of a tool function, decided by its type, whatever it is called: a
/// `Result<T, E>` (also under an alias such as `type Res<T> = Result<T, String>`) with
/// `T:` [`IntoToolOutput`] and `E: Display` is an `isError` result when it is `Err`; anything
/// else is a success.
///
/// Implemented for `Result<T, E>`, [`ToolResult`], [`Content`], [`Json<T>`], strings
/// (`String`, `&str`, `Cow<str>`), numbers, `bool`, `char`, `()`, `serde_json::Value` and
/// objects, and `Option`, `Vec`, maps and sets of `Serialize` values. A `Serialize` type of
/// your own is not one (a blanket impl for every `Serialize` type would cover `Result` too,
/// which could then no longer be told apart), yet `#[tool]` still takes it bare, as its JSON:
/// the macro picks the conversion by the value's type, a `Result` first. Outside `#[tool]`,
/// wrap it in [`Json`].
///
/// ```
/// use toolhost_plugin::{IntoToolResult, Json, ToolResult};
///
/// type Res<T> = Result<T, String>;
/// let failed: Res<u8> = Err("no such note".into());
/// assert_eq!(failed.into_tool_result(), ToolResult::error("no such note"));
/// assert_eq!(Ok::<_, String>(7).into_tool_result(), ToolResult::text("7"));
/// assert_eq!(7.into_tool_result(), ToolResult::text("7"));
///
/// #[derive(serde::Serialize)]
/// struct Stats { words: u32 }
/// let stats = Json(Stats { words: 3 }).into_tool_result();
/// assert_eq!(stats.structured.unwrap()["words"], 3);
/// ```
///
/// Any error type with `Display` works, `anyhow::Error` included:
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::{json, TestContext}};
///
/// /// Read a number from a file.
/// #[tool]
/// fn read_number(
///     /// The file.
///     path: String,
/// ) -> anyhow::Result<i64> {
///     let text = std::fs::read_to_string(&path)?;
///     Ok(text.trim().parse()?)
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let r = read_number::tool().call(json!({"path": "/no/such/file"}), &TestContext::new());
/// assert!(r.is_error);
/// assert!(matches!(&r.content[0], Content::Text(t) if t.contains("No such file")));
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool's return type",
    label = "a tool returns this",
    note = "derive `serde::Serialize` for it (its JSON is the result), or return a \
            `ToolResult` for content blocks; a `Result<T, E>` is an error result on `Err`"
)]
pub trait IntoToolResult {
    /// What a successful result holds: the type whose JSON Schema `#[tool(output_schema)]`
    /// declares (`T` of `Result<T, E>` and of `Json<T>`).
    type Output;

    /// The result of this value: what the model gets.
    fn into_tool_result(self) -> ToolResult;
}

impl<T: IntoToolOutput, E: Display> IntoToolResult for Result<T, E> {
    type Output = T;

    fn into_tool_result(self) -> ToolResult {
        match self {
            Ok(v) => v.into_tool_output(),
            Err(e) => ToolResult::error(e.to_string()),
        }
    }
}

impl IntoToolResult for ToolResult {
    type Output = ToolResult;

    fn into_tool_result(self) -> ToolResult {
        self
    }
}

impl IntoToolResult for Content {
    type Output = Content;

    fn into_tool_result(self) -> ToolResult {
        self.into_tool_output()
    }
}

/// Any `Serialize` value as a tool's successful result: for a type of your own returned
/// without a `Result` (see [`IntoToolResult`]). Serializes as the value itself.
///
/// ```
/// use serde::Serialize;
/// use toolhost_plugin::{prelude::*, testing::TestContext, Json};
///
/// #[derive(Serialize, JsonSchema)]
/// pub struct Stats {
///     /// How many words.
///     words: usize,
/// }
///
/// /// Count the words.
/// #[tool(output_schema)]
/// fn count(text: String) -> Json<Stats> {
///     Json(Stats { words: text.split_whitespace().count() })
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let r = count::tool().call(serde_json::json!({"text": "a b c"}), &TestContext::new());
/// assert_eq!(r.structured.unwrap()["words"], 3);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(transparent)]
pub struct Json<T>(pub T);

/// The schema of `T`: `Json<T>` (also in a `Result`) declares `T`'s schema with
/// `#[tool(output_schema)]`.
impl<T: schemars::JsonSchema> schemars::JsonSchema for Json<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

impl<T: Serialize> IntoToolResult for Json<T> {
    type Output = T;

    fn into_tool_result(self) -> ToolResult {
        ToolResult::json(&self.0)
    }
}

/// `IntoToolResult` for `Serialize` types that are not a `Result`: their JSON, as
/// [`ToolResult::json`] makes it.
macro_rules! serialized {
    ($(impl[$($g:tt)*] $ty:ty => $out:ty;)*) => {
        $(impl<$($g)*> IntoToolResult for $ty {
            type Output = $out;

            fn into_tool_result(self) -> ToolResult {
                ToolResult::json(&self)
            }
        })*
    };
}

serialized! {
    impl[] String => String;
    impl['a] &'a str => String;
    impl['a] std::borrow::Cow<'a, str> => String;
    impl[] Box<str> => String;
    impl[] bool => bool;
    impl[] char => char;
    impl[] () => ();
    impl[] i8 => i8;
    impl[] i16 => i16;
    impl[] i32 => i32;
    impl[] i64 => i64;
    impl[] i128 => i128;
    impl[] isize => isize;
    impl[] u8 => u8;
    impl[] u16 => u16;
    impl[] u32 => u32;
    impl[] u64 => u64;
    impl[] u128 => u128;
    impl[] usize => usize;
    impl[] f32 => f32;
    impl[] f64 => f64;
    impl[] Value => Value;
    impl[] JsonObject => JsonObject;
    impl[T: Serialize] Option<T> => Option<T>;
    impl[T: Serialize] Vec<T> => Vec<T>;
    impl[K: Serialize, V: Serialize, S: std::hash::BuildHasher] std::collections::HashMap<K, V, S> => std::collections::HashMap<K, V, S>;
    impl[K: Serialize, V: Serialize] std::collections::BTreeMap<K, V> => std::collections::BTreeMap<K, V>;
    impl[T: Serialize, S: std::hash::BuildHasher] std::collections::HashSet<T, S> => std::collections::HashSet<T, S>;
    impl[T: Serialize] std::collections::BTreeSet<T> => std::collections::BTreeSet<T>;
}

/// An error a tool returns, with its message for the model: any error type converts into it,
/// so a tool returning `Result<T, ToolError>` can use `?` on every fallible call (the
/// `std::error::Error` ones: [`Cancelled`](crate::Cancelled), [`ContextError`](crate::ContextError),
/// I/O and parse errors), and [`ToolError::new`] says what went wrong in your own words.
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::{json, TestContext}};
///
/// /// Count the lines of a file.
/// #[tool(read_only)]
/// fn lines(
///     /// The file.
///     path: String,
///     /// Give up beyond this many lines.
///     max: Option<usize>,
/// ) -> Result<usize, ToolError> {
///     let text = std::fs::read_to_string(&path)?;
///     let n = text.lines().count();
///     if max.is_some_and(|max| n > max) {
///         return Err(ToolError::new(format!("{path} has more than {} lines", max.unwrap())));
///     }
///     Ok(n)
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let ctx = TestContext::new();
/// let r = lines::tool().call(json!({"path": "/no/such/file"}), &ctx);
/// assert!(r.is_error);
/// let file = std::env::temp_dir().join("toolhost-plugin-lines-doctest.txt");
/// std::fs::write(&file, "a\nb\nc\n").unwrap();
/// let path = file.to_str().unwrap();
/// assert_eq!(lines::tool().call(json!({"path": path}), &ctx), ToolResult::text("3"));
/// let r = lines::tool().call(json!({"path": path, "max": 2}), &ctx);
/// assert_eq!(r, ToolResult::error(format!("{path} has more than 2 lines")));
/// # std::fs::remove_file(&file).unwrap();
///
/// let e: ToolError = "x".parse::<i64>().unwrap_err().into();
/// assert_eq!(e.to_string(), "invalid digit found in string");
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(String);

impl ToolError {
    /// An error with this message (example: [`ToolError`]).
    pub fn new(message: impl Into<String>) -> Self {
        ToolError(message.into())
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(e: E) -> Self {
        ToolError(e.to_string())
    }
}

impl Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What `#[tool]` made of a function's value before it went through [`IntoToolResult`] for
/// every return type; kept for the expansions of older macros.
#[doc(hidden)]
pub fn infallible<T: IntoToolOutput>(value: T) -> ToolResult {
    Ok::<T, Infallible>(value).into_tool_result()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_are_text() {
        assert_eq!(
            Ok::<_, String>("hi".to_string()).into_tool_result(),
            ToolResult::text("hi")
        );
        assert_eq!(infallible("hi"), ToolResult::text("hi"));
    }

    #[test]
    fn whole_numbers_have_no_fraction() {
        assert_eq!(infallible(5.0f64), ToolResult::text("5"));
        assert_eq!(infallible(2.5f64), ToolResult::text("2.5"));
        assert_eq!(infallible(-7i64), ToolResult::text("-7"));
        assert_eq!(infallible(1e300f64), ToolResult::text("1e+300"));
    }

    #[test]
    fn objects_are_structured_and_complete_as_text() {
        #[derive(Serialize)]
        struct Stats {
            words: usize,
            lines: usize,
        }
        let r = infallible(Stats { words: 3, lines: 1 });
        assert_eq!(
            r.structured.map(Value::Object),
            Some(json!({"words": 3, "lines": 1}))
        );
        assert_eq!(r.content, vec![Content::text(r#"{"words":3,"lines":1}"#)]);
        assert!(!r.is_error);
    }

    #[test]
    fn arrays_and_unit() {
        assert_eq!(infallible(vec![1, 2]), ToolResult::text("[1,2]"));
        assert_eq!(infallible(()), ToolResult::default());
    }

    #[test]
    fn scalars_take_the_short_path_to_the_same_result() {
        #[derive(Serialize)]
        struct Meters(f64);
        #[derive(Serialize)]
        enum Mode {
            Fast,
        }
        #[derive(Serialize)]
        struct Unit;
        fn same<T: Serialize>(v: T) {
            assert!(
                v.serialize(scalar::Probe).is_ok(),
                "not short: {}",
                std::any::type_name::<T>()
            );
            assert_eq!(ToolResult::json(&v), ToolResult::json_value(&v));
        }
        let floats = [
            0.0,
            -0.0,
            5.0,
            -7.0,
            2.5,
            0.1 + 0.2,
            1e15,
            999_999_999_999_999.0,
            -1e14,
            1e300,
            5e-324,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            1.0 / 3.0,
        ];
        for f in floats {
            same(f);
            same(Meters(f));
            same(Some(f));
        }
        for i in [0i64, -1, 7, -10, 99, 100, i64::MIN, i64::MAX] {
            same(i);
        }
        same(0u64);
        same(10u64);
        same(u64::MAX);
        same(7u8);
        same(-3i16);
        same(true);
        same('é');
        same("a \"quoted\" text");
        same(String::from("owned"));
        same(());
        same(None::<f64>);
        same(Unit);
        same(Mode::Fast);
        // The rest takes the general path.
        assert!(1.5f32.serialize(scalar::Probe).is_err());
        assert!(vec![1].serialize(scalar::Probe).is_err());
        assert_eq!(ToolResult::json(&1.5f32), ToolResult::text("1.5"));
    }

    #[test]
    fn a_result_is_one_under_any_name() {
        type Res<T> = Result<T, String>;
        let failed: Res<f64> = Err("no such note".into());
        assert_eq!(failed.into_tool_result(), ToolResult::error("no such note"));
        let fine: Res<f64> = Ok(2.0);
        assert_eq!(fine.into_tool_result(), ToolResult::text("2"));
        // Values that are not a `Result` are data, whatever they hold.
        let data: Vec<Res<u8>> = vec![Err("x".into())];
        assert_eq!(
            data.into_tool_result(),
            ToolResult::text(r#"[{"Err":"x"}]"#)
        );
        assert_eq!(Some(3u8).into_tool_result(), ToolResult::text("3"));
        assert_eq!(None::<u8>.into_tool_result(), ToolResult::default());
        assert_eq!(
            Json(json!({"a": 1})).into_tool_result(),
            ToolResult::json(&json!({"a": 1}))
        );
    }

    #[test]
    fn errors_use_display() {
        let r = Err::<f64, _>("division by zero").into_tool_result();
        assert_eq!(r, ToolResult::error("division by zero"));
    }

    #[test]
    fn embedded_resources_keep_their_uri_and_mime_type() {
        let r = ToolResult::text("see the note").with(Content::resource_text(
            "notes://7",
            "text/markdown",
            "# Seven",
        ));
        assert_eq!(
            r.content[1],
            Content::Resource {
                uri: "notes://7".into(),
                mime_type: Some("text/markdown".into()),
                body: ResourceBody::Text("# Seven".into()),
            }
        );
        assert_eq!(
            Content::resource_blob("mem://logo", "image/png", [0x89, b'P']),
            Content::Resource {
                uri: "mem://logo".into(),
                mime_type: Some("image/png".into()),
                body: ResourceBody::Blob(vec![0x89, b'P']),
            }
        );
    }

    #[test]
    fn image_helper_encodes_base64() {
        let r = ToolResult::image(&[0x89, b'P', b'N', b'G'], "image/png");
        assert_eq!(
            r.content,
            vec![Content::Image {
                data: "iVBORw==".into(),
                mime_type: "image/png".into()
            }]
        );
    }
}
