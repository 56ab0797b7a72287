//! Deserializing a struct from a map of strings: a URI template's variables and a prompt's
//! arguments arrive as text, and a field may be a number, a bool or an enum all the same.

use serde::{
    de::{
        self,
        value::{Error, MapDeserializer, StrDeserializer},
        DeserializeOwned, IntoDeserializer, Unexpected, Visitor,
    },
    forward_to_deserialize_any,
};

/// `T` from `pairs`; the error names the field (`` `id`: invalid digit found in string ``,
/// `missing field `id``).
pub(crate) fn from_pairs<'a, T, I>(pairs: I) -> Result<T, String>
where
    T: DeserializeOwned,
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    let map = MapDeserializer::<_, Error>::new(pairs.into_iter().map(|(k, v)| (k, Text(v))));
    serde_path_to_error::deserialize(map).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path == "." || path.is_empty() {
            inner
        } else {
            format!("`{path}`: {inner}")
        }
    })
}

/// One value of the map: text, read as whatever type the field asks for.
#[derive(Clone, Copy)]
struct Text<'a>(&'a str);

impl<'de> IntoDeserializer<'de, Error> for Text<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

macro_rules! parsed {
    ($($method:ident => $visit:ident,)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0.trim().parse() {
                Ok(v) => visitor.$visit(v),
                Err(_) => Err(de::Error::invalid_value(Unexpected::Str(self.0), &visitor)),
            }
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Text<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.0)
    }

    parsed! {
        deserialize_bool => visit_bool,
        deserialize_i8 => visit_i8,
        deserialize_i16 => visit_i16,
        deserialize_i32 => visit_i32,
        deserialize_i64 => visit_i64,
        deserialize_i128 => visit_i128,
        deserialize_u8 => visit_u8,
        deserialize_u16 => visit_u16,
        deserialize_u32 => visit_u32,
        deserialize_u64 => visit_u64,
        deserialize_u128 => visit_u128,
        deserialize_f32 => visit_f32,
        deserialize_f64 => visit_f64,
        deserialize_char => visit_char,
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // A unit variant named by the text.
        visitor.visit_enum(StrDeserializer::<Error>::new(self.0))
    }

    forward_to_deserialize_any! {
        str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Style {
        Short,
        Long,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Args {
        id: u64,
        name: String,
        #[serde(rename = "dry-run", default)]
        dry_run: bool,
        style: Option<Style>,
        ratio: Option<f64>,
    }

    #[test]
    fn text_becomes_numbers_bools_enums_and_options() {
        let a: Args = from_pairs([
            ("id", "7"),
            ("name", "x"),
            ("dry-run", "true"),
            ("style", "long"),
        ])
        .unwrap();
        assert_eq!(
            a,
            Args {
                id: 7,
                name: "x".into(),
                dry_run: true,
                style: Some(Style::Long),
                ratio: None
            }
        );
    }

    #[test]
    fn errors_name_the_field() {
        let e = from_pairs::<Args, _>([("id", "seven"), ("name", "x")]).unwrap_err();
        assert_eq!(e, "`id`: invalid value: string \"seven\", expected u64");
        let e = from_pairs::<Args, _>([("id", "1")]).unwrap_err();
        assert_eq!(e, "missing field `name`");
        let e =
            from_pairs::<Args, _>([("id", "1"), ("name", "x"), ("style", "medium")]).unwrap_err();
        assert!(e.starts_with("`style`: unknown variant `medium`"), "{e}");
    }
}
