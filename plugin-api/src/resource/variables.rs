//! Whether a read function's variable type fits its URI template, checked at load: `#[resource]`
//! checks plain parameters at compile time, but cannot see the fields of a struct of variables,
//! and without this a mismatch failed every read at run time ("invalid type: map, expected a
//! string", "missing field").
//!
//! The type is asked through serde with no input at all: a derived `Deserialize` names its
//! fields when it asks for a struct, and reports the first required field a map lacks.

use std::{cell::Cell, fmt};

use serde::{
    de::{
        self,
        value::{MapDeserializer, SeqDeserializer, StrDeserializer},
        DeserializeOwned, Expected, IntoDeserializer, Visitor,
    },
    forward_to_deserialize_any,
};

/// Checks that `A`, which a resource reads the variables of its URI template into, has a field
/// for each of `variables` and none the template leaves it without. A type that reads any
/// map (a `HashMap`, a struct with `#[serde(flatten)]`) passes.
pub(crate) fn check<A: DeserializeOwned>(variables: &[&str]) -> Result<(), String> {
    let fields = match shape::<A>() {
        Shape::Struct(fields) => fields,
        Shape::AnyMap => return Ok(()),
        Shape::Other(expected) => {
            return Err(format!(
                "it reads the variables of its URI ({}) into {expected}, which cannot hold \
                 them: take them as parameters named like them, or one struct with a field \
                 for each",
                braced(variables)
            ))
        }
    };
    if fields.is_empty() {
        // It takes none of them on purpose (`NoArgs`: one answer for every URI of the template).
        return Ok(());
    }
    let type_name = std::any::type_name::<A>();
    if let Some(v) = variables.iter().find(|v| !fields.contains(v)) {
        return Err(format!(
            "`{{{v}}}` of its URI is not a field of `{type_name}` (its fields: {}; the URI's \
             variables: {})",
            ticked(fields),
            braced(variables)
        ));
    }
    if let Some(field) = required_but_absent::<A>(variables) {
        return Err(format!(
            "field `{field}` of `{type_name}` is not a variable of its URI ({}), so no read \
             would find it: rename it, or make it an `Option` or `#[serde(default)]`",
            braced(variables)
        ));
    }
    Ok(())
}

fn braced(names: &[&str]) -> String {
    let all: Vec<String> = names.iter().map(|n| format!("`{{{n}}}`")).collect();
    all.join(", ")
}

fn ticked(names: &[&str]) -> String {
    if names.is_empty() {
        return "none".into();
    }
    let all: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    all.join(", ")
}

/// What a type asks of the deserializer first.
#[derive(Debug, PartialEq)]
enum Shape {
    /// A struct with these (serde) field names.
    Struct(&'static [&'static str]),
    /// Any map, or it could not tell (`deserialize_any`).
    AnyMap,
    /// Something that is no map: what its visitor expects ("a string").
    Other(String),
}

fn shape<A: DeserializeOwned>() -> Shape {
    let seen = Cell::new(None);
    let _ = A::deserialize(Ask(&seen));
    seen.into_inner().unwrap_or(Shape::AnyMap)
}

/// Why the probes stop: always an error (nothing is ever built), `Missing` when a derived
/// struct reported a required field the map lacks.
#[derive(Debug)]
enum Stop {
    Missing(&'static str),
    Other,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("probe")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Stop::Other
    }

    fn missing_field(field: &'static str) -> Self {
        Stop::Missing(field)
    }
}

/// Records the first thing the type asks for, and stops.
struct Ask<'a>(&'a Cell<Option<Shape>>);

impl Ask<'_> {
    fn other<T>(self, expected: &dyn Expected) -> Result<T, Stop> {
        self.0.set(Some(Shape::Other(expected.to_string())));
        Err(Stop::Other)
    }
}

macro_rules! not_a_map {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
            self.other(&visitor)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Ask<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        self.0.set(Some(Shape::AnyMap));
        Err(Stop::Other)
    }

    fn deserialize_map<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        self.0.set(Some(Shape::AnyMap));
        Err(Stop::Other)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        self.0.set(Some(Shape::Struct(fields)));
        Err(Stop::Other)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Stop> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Stop> {
        self.other(&visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Stop> {
        self.other(&visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Stop> {
        self.other(&visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        self.other(&visitor)
    }

    not_a_map! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_bytes deserialize_byte_buf deserialize_option
        deserialize_unit deserialize_seq deserialize_identifier deserialize_ignored_any
    }
}

/// The first required field of `A` that a map of only `variables` lacks: `A` read from that
/// map, each value answering whatever its field asks for with a placeholder.
fn required_but_absent<A: DeserializeOwned>(variables: &[&str]) -> Option<&'static str> {
    let map = MapDeserializer::<_, Stop>::new(variables.iter().map(|v| (*v, Anything(0))));
    match A::deserialize(map) {
        Err(Stop::Missing(field)) => Some(field),
        _ => None,
    }
}

/// A value that gives any type the plainest value it asks for (a nested struct gets all its
/// fields), at this depth. Only reports of the struct being read count: a missing field of a
/// nested value is hidden.
#[derive(Clone, Copy)]
struct Anything(u8);

/// How deep [`Anything`] builds nested structs before it gives up (no verdict then).
const DEPTH: u8 = 16;

impl<'de> IntoDeserializer<'de, Stop> for Anything {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

/// Hides a nested value's missing fields: they are not the top-level struct's.
fn nested<T>(r: Result<T, Stop>) -> Result<T, Stop> {
    r.map_err(|_| Stop::Other)
}

impl<'de> de::Deserializer<'de> for Anything {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        nested(visitor.visit_unit())
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        nested(visitor.visit_bool(false))
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        nested(visitor.visit_u64(0))
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        nested(visitor.visit_char('x'))
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        nested(visitor.visit_str(""))
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        nested(visitor.visit_bytes(&[]))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        nested(visitor.visit_none())
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Stop> {
        nested(visitor.visit_newtype_struct(self))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        nested(visitor.visit_seq(SeqDeserializer::<_, Stop>::new(
            std::iter::empty::<Anything>(),
        )))
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        let empty = std::iter::empty::<(Anything, Anything)>();
        nested(visitor.visit_map(MapDeserializer::<_, Stop>::new(empty)))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        if self.0 >= DEPTH {
            return Err(Stop::Other);
        }
        let inner = Anything(self.0 + 1);
        let all = fields.iter().map(|f| (*f, inner));
        nested(visitor.visit_map(MapDeserializer::<_, Stop>::new(all)))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        let first = variants.first().copied().unwrap_or_default();
        nested(visitor.visit_enum(StrDeserializer::<Stop>::new(first)))
    }

    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_i8(visitor)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_i8(visitor)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_i8(visitor)
    }

    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_i8(visitor)
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_i8(visitor)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_i8(visitor)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_i8(visitor)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_i8(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_i8(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_str(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_bytes(visitor)
    }

    forward_to_deserialize_any! {
        i128 u128 unit unit_struct tuple tuple_struct ignored_any
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Key {
        #[serde(rename = "the-table")]
        table: String,
        id: u64,
        note: Option<String>,
        #[serde(default)]
        limit: u32,
        style: Style,
        inner: Inner,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    enum Style {
        Short,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        deep: String,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct City(String);

    #[test]
    fn a_struct_names_its_fields_and_what_it_needs() {
        assert!(matches!(shape::<Key>(), Shape::Struct(f) if f.contains(&"the-table")));
        assert_eq!(
            required_but_absent::<Key>(&["the-table", "id", "style"]),
            Some("inner")
        );
        assert_eq!(
            required_but_absent::<Key>(&["the-table", "style", "inner"]),
            Some("id")
        );
        // Optional and defaulted fields, and a nested struct's own fields, never count.
        assert_eq!(
            required_but_absent::<Key>(&["the-table", "id", "style", "inner"]),
            None
        );
        let all = ["the-table", "id", "style", "inner"];
        assert_eq!(check::<Key>(&all), Ok(()));
    }

    #[test]
    fn mismatches_name_the_variable_the_field_and_the_type() {
        let e = check::<Key>(&["the-table", "id", "style", "inner", "city"]).unwrap_err();
        assert!(
            e.starts_with("`{city}` of its URI is not a field of `"),
            "{e}"
        );
        assert!(e.contains("its fields: `the-table`, `id`, `note`"), "{e}");
        let e = check::<Key>(&["the-table", "style", "inner"]).unwrap_err();
        assert!(e.starts_with("field `id` of `"), "{e}");
        assert!(
            e.contains("not a variable of its URI (`{the-table}`, `{style}`, `{inner}`)"),
            "{e}"
        );
    }

    #[test]
    fn a_plain_value_cannot_hold_variables_and_any_map_can() {
        let e = check::<String>(&["city"]).unwrap_err();
        assert!(
            e.starts_with("it reads the variables of its URI (`{city}`) into a string,"),
            "{e}"
        );
        let e = check::<City>(&["city"]).unwrap_err();
        assert!(e.contains("into a string"), "{e}");
        assert!(check::<u64>(&["id"]).unwrap_err().contains("into u64"));
        assert_eq!(check::<HashMap<String, String>>(&["a", "b"]), Ok(()));
        assert_eq!(check::<serde_json::Value>(&["a"]), Ok(()));
        assert_eq!(check::<crate::NoArgs>(&[]), Ok(()));
    }
}
