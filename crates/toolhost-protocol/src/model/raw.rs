//! Borrowing a `RawValue` from text known to be valid JSON, without parsing it again.

use serde::de::{self, value::BorrowedStrDeserializer, DeserializeSeed, MapAccess, Visitor};
use serde_json::value::RawValue;

/// `json`, one complete and valid JSON value (the caller's promise: nothing here checks it),
/// as a borrowed [`RawValue`], without parsing it again.
///
/// Why not serde_json's public way, `serde_json::from_str::<&RawValue>`, which borrows too:
/// it checks the text again. For the four values a CLI-shaped `tools/call` line borrows
/// (params, arguments, progress token, id) it runs about 3,000 instructions against 58 here
/// (callgrind), 320-820 ns against 11-20 ns (`cargo bench -p toolhost --bench parse --
/// borrow`, on a loaded machine): more than all of the rest of `Incoming::parse` (about 2,000
/// instructions). serde_json has no public constructor for a borrowed `RawValue`, but its
/// `Deserialize` takes one from any deserializer that presents it as serde_json's raw-value
/// map (the key its private token, the value the borrowed text), as serde_json's own
/// `BorrowedRawDeserializer` does. Should a later serde_json change that protocol, the
/// public way is taken: the same values, slower; `raw_values_are_borrowed_not_parsed` then
/// fails to say so, and `both_ways_of_borrowing_parse_alike` runs the parsers both ways.
pub fn borrow_raw(json: &str) -> Option<&RawValue> {
    #[cfg(test)]
    if PUBLIC_WAY_ONLY.get() {
        return serde_json::from_str(json).ok();
    }
    <&RawValue as serde::Deserialize>::deserialize(RawText(json))
        .ok()
        .or_else(|| serde_json::from_str(json).ok())
}

#[cfg(test)]
thread_local! {
    static PUBLIC_WAY_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with [`borrow_raw`] taking serde_json's public way only on this thread, as it
/// would if serde_json changed its private protocol.
#[cfg(test)]
fn public_way_only<T>(f: impl FnOnce() -> T) -> T {
    PUBLIC_WAY_ONLY.set(true);
    let out = f();
    PUBLIC_WAY_ONLY.set(false);
    out
}

/// serde_json's name for the raw-value map (`serde_json::raw::TOKEN`).
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

struct RawText<'a>(&'a str);

impl<'de> de::Deserializer<'de> for RawText<'de> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_map(RawMap(Some(self.0)))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

struct RawMap<'a>(Option<&'a str>);

impl<'de> MapAccess<'de> for RawMap<'de> {
    type Error = de::value::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        if self.0.is_none() {
            return Ok(None);
        }
        seed.deserialize(BorrowedStrDeserializer::new(RAW_TOKEN))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let text = self.0.take().ok_or_else(|| de::Error::custom("no value"))?;
        seed.deserialize(BorrowedStrDeserializer::new(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails if serde_json changes the protocol `borrow_raw` relies on (which then takes the
    /// public way): time to look at it again.
    #[test]
    fn raw_values_are_borrowed_not_parsed() {
        let text = r#"{"x": [1, "a\"b"]}"#;
        let raw = <&RawValue as serde::Deserialize>::deserialize(RawText(text))
            .expect("serde_json's raw-value protocol");
        assert!(std::ptr::eq(raw.get(), text));
    }

    /// Lines of every shape the model reads, parsed with `borrow_raw` taking the private way
    /// and the public one: the same results.
    #[test]
    fn both_ways_of_borrowing_parse_alike() {
        use crate::model::{CallParams, Incoming, JsonRpc};
        let call = r#"{"name":"add","arguments":{"x":1039,"y":[1,{"z":"]"}]},"_meta":{"claudecode/toolUseId":"toolu_1","progressToken":1041}}"#;
        let rpc = format!(r#"{{"method":"tools/call","params":{call},"jsonrpc":"2.0","id":1041}}"#);
        let lines = [
            // The CLI's exact shape, and the same keys reordered and spaced.
            format!(
                r#"{{"type":"control_request","request_id":"b1","request":{{"subtype":"mcp_message","server_name":"calc","message":{rpc}}}}}"#
            ),
            format!(
                r#"{{ "request" : {{ "message" : {rpc} , "server_name" : "calc", "subtype" : "mcp_message" }}, "request_id" : "b1", "type" : "control_request" }}"#
            ),
            r#"{"type":"control_request","request_id":"b2","request":{"subtype":"mcp_message","server_name":"calc","message":{"method":"notifications/cancelled","params":{"requestId":7,"reason":"x"},"jsonrpc":"2.0"}}}"#.into(),
            r#"{"type":"control_request","request_id":"b3","request":{"subtype":"can_use_tool","tool_name":"mcp__calc__add","input":{"x":[1,2]},"tool_use_id":"t"}}"#.into(),
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"h1","response":{"behavior":"allow"}}}"#.into(),
            r#"{"type":"assistant","message":{"content":[]}}"#.into(),
            rpc.clone(),
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":null}}"#.into(),
            call.into(),
            r#"{"name":"x","_meta":{"progressToken":"tok"},"arguments":{}}"#.into(),
            r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#.into(),
        ];
        let parse_all = |line: &str| {
            let incoming = Incoming::parse(line);
            let call = incoming.as_ref().ok().and_then(|m| {
                let message = m.request.as_ref()?.message.as_ref()?;
                Some(format!("{:?}", message.call_params()))
            });
            let rpc = JsonRpc::parse(line);
            let rpc_call = rpc.as_ref().ok().map(|m| format!("{:?}", m.call_params()));
            let params = CallParams::parse(line);
            let from_raw = serde_json::from_str::<&RawValue>(line).map(CallParams::from_raw);
            format!("{incoming:?}\n{call:?}\n{rpc:?}\n{rpc_call:?}\n{params:?}\n{from_raw:?}")
        };
        for line in &lines {
            let private = parse_all(line);
            let public = public_way_only(|| parse_all(line));
            assert_eq!(private, public, "{line}");
        }
        for text in ["0", "-1.5e3", r#""a\u00e9""#, "[]", call, rpc.as_str()] {
            let public = public_way_only(|| borrow_raw(text)).expect("valid");
            assert!(std::ptr::eq(public.get(), borrow_raw(text).unwrap().get()));
        }
    }
}
