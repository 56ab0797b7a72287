//! Reading a hook event's input: one pass over the CLI's JSON object into the event's struct,
//! its own fields typed and every other field kept (`events!`, used by `events.rs` and
//! `session_events.rs`).

use serde::{de::MapAccess, Deserialize};

/// A key of an event's input, borrowed from the input when it has no escapes.
pub(super) enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    pub(super) fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }

    pub(super) fn into_string(self) -> String {
        match self {
            Key::Borrowed(s) => s.to_string(),
            Key::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> serde::de::Visitor<'de> for Text {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a field name")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(s))
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(s.to_string()))
            }

            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(s))
            }
        }
        d.deserialize_str(Text)
    }
}

/// Reads field `name`'s value into `slot`; a second one is an error, as derived code has it.
pub(super) fn take<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    name: &'static str,
    map: &mut A,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(serde::de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// A field the input lacks: its default if its attributes (`attrs`, as written) give it
/// `#[serde(default)]`, else the error derived code gives.
pub(super) fn missing<T: Default, E: serde::de::Error>(
    name: &'static str,
    attrs: &str,
) -> Result<T, E> {
    if attrs.contains("serde(default") {
        Ok(T::default())
    } else {
        Err(E::missing_field(name))
    }
}

/// The name of a field in the input: `as "name"` if given, else the field's.
macro_rules! field_key {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident, $key:literal) => {
        $key
    };
}

/// Reads a field's value into its slot (`$with`: a `deserialize_with` function).
macro_rules! read_field {
    ($map:ident, $slot:ident, $key:expr, $ty:ty) => {
        take(&mut $slot, $key, &mut $map)?
    };
    ($map:ident, $slot:ident, $key:expr, $ty:ty, $with:path) => {{
        struct Via($ty);
        impl<'de> Deserialize<'de> for Via {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $with(d).map(Via)
            }
        }
        let mut via: Option<Via> = $slot.take().map(Via);
        take(&mut via, $key, &mut $map)?;
        $slot = via.map(|v| v.0);
    }};
}

/// Defines each event struct: the common fields of every hook input, the event's own, and
/// `other` for the rest; `Default` fills `hook_event_name` with the event's name.
macro_rules! events {
    ($(
        $(#[$doc:meta])*
        $name:ident {
            $( $(#[$fattr:meta])* $field:ident $(as $key:literal)? : $ty:ty $([$with:path])?, )*
        }
    )*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Serialize)]
        pub struct $name {
            /// The session's id.
            #[serde(default)]
            pub session_id: String,
            /// The session's transcript (a JSONL file).
            #[serde(default)]
            pub transcript_path: String,
            /// The working folder of the session.
            #[serde(default)]
            pub cwd: String,
            /// `default`, `acceptEdits`, `plan`, `bypassPermissions`, `dontAsk`, `auto`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub permission_mode: Option<String>,
            /// The event's name, as the CLI sent it.
            #[serde(default)]
            pub hook_event_name: String,
            $( $(#[$fattr])* $(#[serde(rename = $key)])? pub $field: $ty, )*
            /// Every other field the CLI sent.
            #[serde(flatten)]
            pub other: Map<String, Value>,
        }

        // By hand rather than derived: a derived `#[serde(flatten)]` buffers the whole input
        // (every key and value copied) before the fields get it; this reads it once.
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Fields;
                impl<'de> serde::de::Visitor<'de> for Fields {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($name)))
                    }

                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        let mut session_id = None;
                        let mut transcript_path = None;
                        let mut cwd = None;
                        let mut permission_mode = None;
                        let mut hook_event_name = None;
                        $( let mut $field: Option<$ty> = None; )*
                        let mut other = Map::new();
                        while let Some(key) = map.next_key::<Key<'de>>()? {
                            match key.as_str() {
                                "session_id" => take(&mut session_id, "session_id", &mut map)?,
                                "transcript_path" => {
                                    take(&mut transcript_path, "transcript_path", &mut map)?
                                }
                                "cwd" => take(&mut cwd, "cwd", &mut map)?,
                                "permission_mode" => {
                                    take(&mut permission_mode, "permission_mode", &mut map)?
                                }
                                "hook_event_name" => {
                                    take(&mut hook_event_name, "hook_event_name", &mut map)?
                                }
                                $( field_key!($field $(, $key)?) => {
                                    read_field!(map, $field, field_key!($field $(, $key)?), $ty $(, $with)?)
                                } )*
                                _ => {
                                    other.insert(key.into_string(), map.next_value()?);
                                }
                            }
                        }
                        Ok($name {
                            session_id: session_id.unwrap_or_default(),
                            transcript_path: transcript_path.unwrap_or_default(),
                            cwd: cwd.unwrap_or_default(),
                            permission_mode: permission_mode.unwrap_or_default(),
                            hook_event_name: hook_event_name.unwrap_or_default(),
                            $( $field: match $field {
                                Some(v) => v,
                                None => missing(
                                    field_key!($field $(, $key)?),
                                    stringify!($($fattr)*),
                                )?,
                            }, )*
                            other,
                        })
                    }
                }
                d.deserialize_map(Fields)
            }
        }

        impl HookEvent for $name {
            const NAME: &'static str = stringify!($name);

            fn hook_event_name(&self) -> &str {
                &self.hook_event_name
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    session_id: String::new(),
                    transcript_path: String::new(),
                    cwd: String::new(),
                    permission_mode: None,
                    hook_event_name: stringify!($name).to_string(),
                    $( $field: Default::default(), )*
                    other: Map::new(),
                }
            }
        }
    )*};
}

pub(super) use {events, field_key, read_field};
