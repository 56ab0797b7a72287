//! The resource limits of a plugin's worker: configuration data (`memory` and `processes` in
//! `[plugin.NAME]`), read here; `worker::limits` applies them.

use std::fmt;

use serde::{de, Deserializer};

/// A limit as written: a bound, or `"unlimited"` (which also turns a default off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Unlimited,
    At(u64),
}

/// The least memory a worker may be given: below it the worker itself (the toolhost binary,
/// its threads, the plugin's code) cannot start.
pub const MIN_MEMORY: u64 = 16 << 20;
/// The fewest tasks a worker may be given: the worker itself runs up to three threads.
pub const MIN_PROCESSES: u64 = 8;
/// Memory of a sandboxed plugin unless its table says otherwise: far more than a tool needs,
/// far less than the machine has.
pub const SANDBOX_MEMORY: u64 = 1 << 30;
/// Processes and threads of a sandboxed plugin unless its table says otherwise: room for a
/// runtime's thread pools, a stop for a fork bomb or a thread leak.
pub const SANDBOX_PROCESSES: u64 = 512;

/// One bound in force for a worker, and whether the table set it (a default is applied as
/// far as the system can; a bound the user wrote is refused where it cannot be enforced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    pub value: u64,
    pub explicit: bool,
}

/// The bounds of one plugin's worker, defaults applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Bytes.
    pub memory: Option<Bound>,
    /// Processes and threads together (tasks).
    pub processes: Option<Bound>,
}

impl Limits {
    /// The bounds of a plugin whose table says `memory` and `processes`; a sandboxed one
    /// (`sandboxed`) gets the sandbox defaults for those it leaves unset.
    pub fn resolve(memory: Option<Limit>, processes: Option<Limit>, sandboxed: bool) -> Limits {
        let pick = |set: Option<Limit>, default: u64| match set {
            Some(Limit::At(value)) => Some(Bound {
                value,
                explicit: true,
            }),
            Some(Limit::Unlimited) => None,
            None => sandboxed.then_some(Bound {
                value: default,
                explicit: false,
            }),
        };
        Limits {
            memory: pick(memory, SANDBOX_MEMORY),
            processes: pick(processes, SANDBOX_PROCESSES),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.memory.is_none() && self.processes.is_none()
    }
}

/// `512 MiB`, `1 GiB`, `1536 KiB`: the largest binary unit that divides it.
pub fn show_bytes(n: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n >= 1 << shift && n % (1 << shift) == 0 {
            return format!("{} {unit}", n >> shift);
        }
    }
    format!("{n} bytes")
}

/// Bytes from `512M`, `2G`, `1536K`, `1GiB`, `64MB` (binary multiples, as in systemd and
/// cgroups), or a bare number of bytes.
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit
        .strip_suffix("ib")
        .or_else(|| unit.strip_suffix('b'))
        .unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return None,
    };
    number.checked_mul(1 << shift)
}

struct Visit {
    expecting: &'static str,
    min: u64,
    sized: bool,
}

impl<'de> de::Visitor<'de> for Visit {
    type Value = Limit;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Limit, E> {
        if v.trim().eq_ignore_ascii_case("unlimited") {
            return Ok(Limit::Unlimited);
        }
        let n = if self.sized {
            parse_size(v)
        } else {
            v.trim().parse().ok()
        };
        match n {
            Some(n) if n >= self.min => Ok(Limit::At(n)),
            _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Limit, E> {
        match u64::try_from(v) {
            Ok(n) => self.visit_u64(n),
            Err(_) => Err(E::invalid_value(de::Unexpected::Signed(v), &self)),
        }
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Limit, E> {
        if v < self.min {
            return Err(E::invalid_value(de::Unexpected::Unsigned(v), &self));
        }
        Ok(Limit::At(v))
    }
}

/// `memory = "512M"` (or a number of bytes, or `"unlimited"`).
pub(super) fn memory<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Limit>, D::Error> {
    d.deserialize_any(Visit {
        expecting: "a size such as \"512M\" or \"2G\" (at least 16M), or \"unlimited\"",
        min: MIN_MEMORY,
        sized: true,
    })
    .map(Some)
}

/// `processes = 64` (or `"unlimited"`).
pub(super) fn processes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Limit>, D::Error> {
    d.deserialize_any(Visit {
        expecting: "a number of processes and threads (at least 8), or \"unlimited\"",
        min: MIN_PROCESSES,
        sized: false,
    })
    .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_binary_units() {
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("2g"), Some(2 << 30));
        assert_eq!(parse_size("1536KiB"), Some(1536 << 10));
        assert_eq!(parse_size("64 MB"), Some(64 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        for bad in ["", "M", "1.5G", "12X", "-1M", "99999999999T"] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
        assert_eq!(show_bytes(512 << 20), "512 MiB");
        assert_eq!(show_bytes(1 << 30), "1 GiB");
        assert_eq!(show_bytes(1536 << 10), "1536 KiB");
        assert_eq!(show_bytes(1000), "1000 bytes");
    }

    #[test]
    fn a_sandbox_brings_defaults_that_a_table_overrides_or_turns_off() {
        let none = Limits::resolve(None, None, false);
        assert!(none.is_empty());
        let sandboxed = Limits::resolve(None, None, true);
        assert_eq!(
            sandboxed.memory,
            Some(Bound {
                value: SANDBOX_MEMORY,
                explicit: false
            })
        );
        assert_eq!(sandboxed.processes.unwrap().value, SANDBOX_PROCESSES);
        let set = Limits::resolve(Some(Limit::At(64 << 20)), Some(Limit::Unlimited), true);
        assert_eq!(
            set.memory,
            Some(Bound {
                value: 64 << 20,
                explicit: true
            })
        );
        assert_eq!(set.processes, None);
    }
}
