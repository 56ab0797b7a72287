//! Recognizes the values `ToolResult::json` turns into text or nothing without a
//! `serde_json::Value`: what `serde_json::to_value` would make a number, a string, a bool or
//! `null`. Anything else (and `f32`, 128-bit integers) is `NotScalar`: the caller takes the
//! general path, so the result is the same either way.

use serde::ser::{self, Impossible, Serialize};

pub enum Scalar {
    Text(String),
    /// `null`: an empty result.
    Nothing,
}

#[derive(Debug)]
pub struct NotScalar;

impl std::fmt::Display for NotScalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a scalar")
    }
}

impl std::error::Error for NotScalar {}

impl ser::Error for NotScalar {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        NotScalar
    }
}

pub struct Probe;

type Out = Result<Scalar, NotScalar>;

fn text(t: impl ToString) -> Out {
    Ok(Scalar::Text(t.to_string()))
}

/// `serialize_*` methods that make a value its text.
macro_rules! text_of {
    ($($method:ident: $ty:ty),* $(,)?) => {
        $(fn $method(self, v: $ty) -> Out {
            text(v)
        })*
    };
}

impl ser::Serializer for Probe {
    type Ok = Scalar;
    type Error = NotScalar;
    type SerializeSeq = Impossible<Scalar, NotScalar>;
    type SerializeTuple = Impossible<Scalar, NotScalar>;
    type SerializeTupleStruct = Impossible<Scalar, NotScalar>;
    type SerializeTupleVariant = Impossible<Scalar, NotScalar>;
    type SerializeMap = Impossible<Scalar, NotScalar>;
    type SerializeStruct = Impossible<Scalar, NotScalar>;
    type SerializeStructVariant = Impossible<Scalar, NotScalar>;

    text_of! {
        serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_char: char, serialize_str: &str,
    }
    fn serialize_f32(self, _: f32) -> Out {
        Err(NotScalar)
    }
    fn serialize_f64(self, v: f64) -> Out {
        // `to_value` makes a non-finite float `null`.
        if v.is_finite() {
            Ok(Scalar::Text(super::float_text(v)))
        } else {
            Ok(Scalar::Nothing)
        }
    }
    fn serialize_bytes(self, _: &[u8]) -> Out {
        Err(NotScalar)
    }
    fn serialize_none(self) -> Out {
        Ok(Scalar::Nothing)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Out {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Out {
        Ok(Scalar::Nothing)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Out {
        Ok(Scalar::Nothing)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Out {
        text(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Out {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Out {
        Err(NotScalar)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotScalar> {
        Err(NotScalar)
    }
}
