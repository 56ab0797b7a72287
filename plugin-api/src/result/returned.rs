//! How `#[tool]` turns a function's value into its result, chosen by the value's type at the
//! expansion site (autoref-based dispatch: no blanket impl, so no coherence conflict).
//!
//! A tool may return anything that is [`IntoToolResult`], and also, as the first SDK (0.1.0)
//! allowed, a `Serialize` type of its own (`-> Stats`). The two cannot be one trait: a blanket
//! `impl<T: Serialize> IntoToolResult for T` would also cover `Result<T, E>` (which is
//! `Serialize`), and an `Err` would then be data instead of an error. So the generated code
//! asks `(&&&&probe(&value)).__toolhost_kind()`, and method lookup takes the impl with the most
//! references first:
//!
//! 1. `&&&Probe<Result<T, E>>`: any `Result` is an error result, whatever `T` and `E` are
//!    (if they do not fit, the error says what `Result<T, E>` lacks, not that it is data);
//! 2. `&&Probe<T>` for `T: IntoToolResult`: strings, numbers, `ToolResult`, `Json<T>`, ...;
//! 3. `&Probe<T>` for `T: Serialize`: a type of one's own, as its JSON (like [`Json`]);
//! 4. `Probe<T>` for anything else: taken as `IntoToolResult`, whose message then says what a
//!    tool may return.
//!
//! Each answers a tag ([`ByResult`], [`BySerialize`]) whose methods do the conversion, so
//! `T`'s bounds are checked there and the value is moved only once.

use std::marker::PhantomData;

use serde::Serialize;

use super::{IntoToolResult, Json, ToolResult};
use crate::tool::ToolDef;

/// A stand-in for a value of type `T` (it holds none), probed for its kind.
pub struct Probe<T>(PhantomData<T>);

/// The probe of `value`'s type (the borrow ends at once: the probe holds no reference).
pub fn probe<T>(_value: &T) -> Probe<T> {
    Probe(PhantomData)
}

/// The probe of type `T`, for `#[tool(output_schema)]`, which names the return type.
pub fn probe_type<T>() -> Probe<T> {
    Probe(PhantomData)
}

/// The value goes through [`IntoToolResult`].
pub struct ByResult;

/// The value is `Serialize` data of the plugin's own type: its JSON.
pub struct BySerialize;

impl ByResult {
    /// The result of `value`.
    pub fn into_tool_result<T: IntoToolResult>(self, value: T) -> ToolResult {
        value.into_tool_result()
    }

    /// `def` declaring the schema of what a successful `T` holds.
    pub fn output_schema<T>(self, def: ToolDef) -> ToolDef
    where
        T: IntoToolResult,
        T::Output: schemars::JsonSchema,
    {
        def.output_schema::<T::Output>()
    }
}

impl BySerialize {
    /// The result of `value`: its JSON, as [`Json`] makes it.
    pub fn into_tool_result<T: Serialize>(self, value: T) -> ToolResult {
        Json(value).into_tool_result()
    }

    /// `def` declaring `T`'s schema.
    pub fn output_schema<T: schemars::JsonSchema>(self, def: ToolDef) -> ToolDef {
        def.output_schema::<T>()
    }
}

/// Step 1: any `Result`.
pub trait KindOfResult {
    /// The tag.
    fn __toolhost_kind(&self) -> ByResult {
        ByResult
    }
}
impl<T, E> KindOfResult for &&&Probe<Result<T, E>> {}

/// Step 2: an [`IntoToolResult`] type.
pub trait KindOfIntoToolResult {
    /// The tag.
    fn __toolhost_kind(&self) -> ByResult {
        ByResult
    }
}
impl<T: IntoToolResult> KindOfIntoToolResult for &&Probe<T> {}

/// Step 3: a `Serialize` type of the plugin's own.
pub trait KindOfSerialize {
    /// The tag.
    fn __toolhost_kind(&self) -> BySerialize {
        BySerialize
    }
}
impl<T: Serialize> KindOfSerialize for &Probe<T> {}

/// Step 4: anything else, to be told what a tool returns.
pub trait KindOfOther {
    /// The tag.
    fn __toolhost_kind(&self) -> ByResult {
        ByResult
    }
}
impl<T> KindOfOther for Probe<T> {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Serialize)]
    struct Stats {
        words: u32,
    }

    /// The expansion's dispatch, as `#[tool]` writes it.
    macro_rules! result_of {
        ($value:expr) => {{
            #[allow(unused_imports)]
            use super::{
                KindOfIntoToolResult as _, KindOfOther as _, KindOfResult as _,
                KindOfSerialize as _,
            };
            let value = $value;
            (&&&&probe(&value))
                .__toolhost_kind()
                .into_tool_result(value)
        }};
    }

    #[test]
    fn an_err_of_a_serialize_result_is_an_error_not_data() {
        let r: Result<Stats, String> = Err("no words".into());
        assert_eq!(result_of!(r), ToolResult::error("no words"));
        type Res<T> = Result<T, String>;
        let r: Res<u8> = Err("renamed".into());
        assert_eq!(result_of!(r), ToolResult::error("renamed"));
    }

    #[test]
    fn a_type_of_ones_own_is_its_json() {
        let r = result_of!(Stats { words: 3 });
        assert_eq!(
            r.structured.map(serde_json::Value::Object),
            Some(json!({"words": 3}))
        );
    }

    #[test]
    fn into_tool_result_types_keep_their_conversion() {
        assert_eq!(result_of!("hi"), ToolResult::text("hi"));
        assert_eq!(result_of!(ToolResult::error("x")), ToolResult::error("x"));
        assert_eq!(result_of!(5u8), ToolResult::text("5"));
    }
}
