//! `requestState` of a 2026-07-28 `input_required` result: the answers a request gathered so
//! far, handed to the client to send back with its retry, so no server keeps a call waiting
//! (docs/design/talk-back.md §3.4).
//!
//! The client holds it, so it must not be able to change it, move it to another request,
//! another endpoint or plugin, or another token, or keep it forever: it is
//! `base64url(payload).base64url(mac)`, the payload JSON `{"v","e","p","m","n","a","x","i","r"}`
//! (version, endpoint, plugin, method, target name, digest of the arguments, expiry in Unix
//! seconds, a random nonce, the answers) and the MAC HMAC-SHA256 over the payload and a digest
//! of the bearer token that made it (kept out of the payload: the client learns nothing of
//! it). The key is random per process, so a state outlives neither a restart nor a hop to
//! another replica, unless `--state-key-file` gives every replica the same one.
//!
//! A state is good for one request: [`StateKey::redeem`] records the MAC of each state it
//! lets through until the state expires, so an answered question (a confirmation) runs its
//! tool once, however often the request is sent again. The record is this process's: a
//! replica sharing the key does not know what another one let through.

use std::{
    collections::{BTreeSet, HashMap},
    sync::Mutex,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};
use hmac::{Hmac, Mac};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// The longest `requestState` read or made, in bytes.
pub const MAX_STATE_BYTES: usize = 64 << 10;
/// How long a state stays good after it was made: a person answers a form in that time.
pub const STATE_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// The payload's version (2: bound to the endpoint and plugin, with a nonce).
const VERSION: u64 = 2;
/// Most states recorded as used at once (each held until it expires: about 100 bytes
/// apiece). Past it, a state is refused until older ones expire ([`Redeem::Full`]): a
/// state that could not be recorded could be replayed.
pub const MAX_SPENT: usize = 65_536;

/// The one message every state that does not verify gets: which check failed is not told.
pub const UNVERIFIED: &str = "invalid params: requestState does not verify";

/// Shortest secret a state key file may hold, in bytes.
pub const MIN_KEY_FILE_BYTES: usize = 32;
/// The largest state key file accepted (a key is a line).
const MAX_KEY_FILE_BYTES: u64 = 64 << 10;

/// Why a state key file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateKeyError {
    #[error(transparent)]
    Secret(#[from] crate::trust::SecretError),
    #[error("the state key file {path} holds {len} bytes; use at least {MIN_KEY_FILE_BYTES} (e.g. `openssl rand -hex 32`)")]
    Short { path: String, len: usize },
}

/// The key of the MACs, and the record of the states already used.
pub struct StateKey {
    key: [u8; 32],
    spent: Mutex<Spent>,
}

/// The states let through and not expired yet, by MAC: held until their expiry, at most
/// [`MAX_SPENT`].
#[derive(Default)]
struct Spent {
    by_mac: HashMap<[u8; 32], u64>,
    /// The same, by expiry: the expired ones leave from the front.
    by_expiry: BTreeSet<(u64, [u8; 32])>,
}

impl Spent {
    /// Records `mac`, good until `expiry`; `Err` if it was used already or the record is
    /// full of states not expired at `now`.
    fn record(&mut self, mac: [u8; 32], expiry: u64, now: u64) -> Result<(), Redeem> {
        while let Some(&(x, m)) = self.by_expiry.first() {
            if x >= now {
                break;
            }
            self.by_expiry.pop_first();
            self.by_mac.remove(&m);
        }
        if self.by_mac.contains_key(&mac) {
            return Err(Redeem::Unverified(Unverified("used already")));
        }
        if self.by_mac.len() >= MAX_SPENT {
            return Err(Redeem::Full);
        }
        self.by_mac.insert(mac, expiry);
        self.by_expiry.insert((expiry, mac));
        Ok(())
    }
}

/// A state that verified: its answers, its MAC and its expiry.
type Opened = (Map<String, Value>, [u8; 32], u64);

/// Why [`StateKey::redeem`] did not let a state through.
#[derive(Debug, PartialEq, Eq)]
pub enum Redeem {
    /// It does not verify, or was used already (the client is told [`UNVERIFIED`] only).
    Unverified(Unverified),
    /// [`MAX_SPENT`] states not expired yet are recorded already.
    Full,
}

impl StateKey {
    fn with(key: [u8; 32]) -> Self {
        StateKey {
            key,
            spent: Mutex::new(Spent::default()),
        }
    }
}

impl StateKey {
    /// The key of `path` (`--state-key-file`): its secret (surrounding white space trimmed,
    /// at least [`MIN_KEY_FILE_BYTES`]) hashed to 32 bytes. Held to every secret file's rules
    /// ([`crate::trust::read_secret`]).
    pub fn load(path: &std::path::Path, allow_shared: bool) -> Result<Self, StateKeyError> {
        let shown = path.display().to_string();
        let bytes =
            crate::trust::read_secret(path, "state key file", allow_shared, MAX_KEY_FILE_BYTES)?;
        let secret = bytes.trim_ascii();
        if secret.len() < MIN_KEY_FILE_BYTES {
            return Err(StateKeyError::Short {
                path: shown,
                len: secret.len(),
            });
        }
        let mut h = Sha256::new();
        h.update(b"toolhost requestState key\0");
        h.update(secret);
        Ok(StateKey::with(h.finalize().into()))
    }

    /// A fresh random key.
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        if getrandom::fill(&mut key).is_err() {
            // No entropy source at all: states then verify nowhere but here, as they would
            // with a random key; say so.
            tracing::warn!(target: "toolhost::http", "no random source for the requestState key");
            let seed = format!("{:?}{}", SystemTime::now(), std::process::id());
            key = Sha256::digest(seed.as_bytes()).into();
        }
        StateKey::with(key)
    }

    /// The HMAC-SHA256 of `parts`, one after the other, not finalized yet.
    fn mac(&self, parts: &[&[u8]]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        for p in parts {
            mac.update(p);
        }
        mac
    }

    /// The state holding `answers` for the request `binding` describes, good until `now` +
    /// [`STATE_LIFETIME`]; `None` when it would be over [`MAX_STATE_BYTES`].
    pub fn seal(
        &self,
        binding: &Binding<'_>,
        answers: &Map<String, Value>,
        now: u64,
    ) -> Option<String> {
        let mut nonce = [0u8; 12];
        // Without a random source the states still differ by their answers and expiry.
        let _ = getrandom::fill(&mut nonce);
        let payload = json!({
            "v": VERSION,
            "e": binding.endpoint,
            "p": binding.plugin,
            "m": binding.method,
            "n": binding.target,
            "a": binding.arguments_digest(),
            "x": now + STATE_LIFETIME.as_secs(),
            "i": URL_SAFE_NO_PAD.encode(nonce),
            "r": answers,
        })
        .to_string();
        let mac = self
            .mac(&[payload.as_bytes(), &binding.token])
            .finalize()
            .into_bytes();
        let state = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload.as_bytes()),
            URL_SAFE_NO_PAD.encode(mac)
        );
        (state.len() <= MAX_STATE_BYTES).then_some(state)
    }

    /// [`Self::open`], once: the state is recorded as used (until it expires), and the same
    /// state again is refused. So one answered round runs its request once.
    pub fn redeem(
        &self,
        binding: &Binding<'_>,
        state: &str,
        now: u64,
    ) -> Result<Map<String, Value>, Redeem> {
        let (answers, mac, expiry) = self
            .verify(binding, state, now)
            .map_err(Redeem::Unverified)?;
        crate::sync::lock(&self.spent).record(mac, expiry, now)?;
        Ok(answers)
    }

    /// The answers of `state` if it is one this key made, for the request `binding`
    /// describes, and not expired at `now` (whether it was used already is not looked at:
    /// [`Self::redeem`] does).
    pub fn open(
        &self,
        binding: &Binding<'_>,
        state: &str,
        now: u64,
    ) -> Result<Map<String, Value>, Unverified> {
        self.verify(binding, state, now)
            .map(|(answers, ..)| answers)
    }

    /// [`Self::open`], with the state's MAC and expiry.
    fn verify(&self, binding: &Binding<'_>, state: &str, now: u64) -> Result<Opened, Unverified> {
        if state.len() > MAX_STATE_BYTES {
            return Err(Unverified("over the size limit"));
        }
        let (payload, mac) = state.split_once('.').ok_or(Unverified("not two parts"))?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| Unverified("payload not base64url"))?;
        let mac = URL_SAFE_NO_PAD
            .decode(mac)
            .map_err(|_| Unverified("mac not base64url"))?;
        // Compared in constant time.
        self.mac(&[&payload, &binding.token])
            .verify_slice(&mac)
            .map_err(|_| Unverified("mac"))?;
        let mac: [u8; 32] = mac.try_into().map_err(|_| Unverified("mac"))?;
        let payload: Value =
            serde_json::from_slice(&payload).map_err(|_| Unverified("payload not JSON"))?;
        if payload["v"] != VERSION {
            return Err(Unverified("version"));
        }
        if payload["e"] != binding.endpoint || payload["p"] != binding.plugin {
            return Err(Unverified("another endpoint or plugin"));
        }
        if payload["m"] != binding.method || payload["n"] != binding.target {
            return Err(Unverified("another method or target"));
        }
        if payload["a"] != binding.arguments_digest() {
            return Err(Unverified("other arguments"));
        }
        let expiry = match payload["x"].as_u64() {
            Some(x) if x >= now => x,
            _ => return Err(Unverified("expired")),
        };
        match payload.get("r") {
            Some(Value::Object(answers)) => Ok((answers.clone(), mac, expiry)),
            _ => Err(Unverified("no answers")),
        }
    }
}

/// Why a state did not verify (for the log; the client is told [`UNVERIFIED`] only).
#[derive(Debug, PartialEq, Eq)]
pub struct Unverified(pub &'static str);

/// What a state is bound to: the request it was made for (its endpoint, its plugin, its
/// method, target and arguments) and the token that made it.
pub struct Binding<'a> {
    /// The endpoint's plugin name (`/mcp/NAME`), `""` for the all-plugins `/mcp`.
    pub endpoint: &'a str,
    /// The plugin that serves the target, as the host resolved it (`""`: none).
    pub plugin: &'a str,
    pub method: &'a str,
    /// The tool's or prompt's name, or the resource's URI.
    pub target: &'a str,
    pub arguments: Option<&'a Value>,
    /// A digest of the bearer token presented (zero without tokens).
    pub token: [u8; 32],
}

impl Binding<'_> {
    /// The SHA-256 of the arguments' canonical JSON (keys sorted), hex.
    fn arguments_digest(&self) -> String {
        let mut text = String::new();
        canonical(self.arguments.unwrap_or(&Value::Null), &mut text);
        hex(&Sha256::digest(text.as_bytes()))
    }
}

/// The digest a token is bound by: SHA-256 of its bytes, under a label of its own.
pub fn token_digest(token: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"toolhost requestState token\0");
    h.update(token);
    h.finalize().into()
}

/// Now, in Unix seconds.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `value` as JSON with every object's keys sorted: the same arguments give the same text
/// whatever order the client wrote them in.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding<'a>(target: &'a str, args: &'a Value, token: &[u8]) -> Binding<'a> {
        Binding {
            endpoint: "rt4",
            plugin: "rt4",
            method: "tools/call",
            target,
            arguments: Some(args),
            token: token_digest(token),
        }
    }

    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        // Test case 2 has a 4-byte key; ours is 32 bytes zero-padded, which HMAC does itself.
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        let mac = StateKey::with(key)
            .mac(&[b"what do ya want ", b"for nothing?"])
            .finalize()
            .into_bytes();
        assert_eq!(
            hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn a_state_opens_only_for_its_request_its_token_and_its_time() {
        let key = StateKey::random();
        let args = json!({"b": 1, "a": [true, {"y": 2, "x": 1}]});
        let answers: Map<String, Value> =
            serde_json::from_value(json!({"k": {"action": "accept", "content": {"n": "A"}}}))
                .unwrap();
        let b = binding("t", &args, b"token-one-0123456789");
        let state = key.seal(&b, &answers, 1000).unwrap();
        assert_eq!(key.open(&b, &state, 1000), Ok(answers.clone()));
        // The same arguments in another order are the same arguments.
        let reordered = json!({"a": [true, {"x": 1, "y": 2}], "b": 1});
        let same = binding("t", &reordered, b"token-one-0123456789");
        assert!(key.open(&same, &state, 1000).is_ok());

        let other_args = json!({"b": 2, "a": [true, {"y": 2, "x": 1}]});
        for (why, other, at) in [
            (
                "other token",
                binding("t", &args, b"token-two-0123456789"),
                1000,
            ),
            (
                "other tool",
                binding("u", &args, b"token-one-0123456789"),
                1000,
            ),
            (
                "other arguments",
                binding("t", &other_args, b"token-one-0123456789"),
                1000,
            ),
            (
                "expired",
                binding("t", &args, b"token-one-0123456789"),
                1001 + 600,
            ),
        ] {
            assert!(key.open(&other, &state, at).is_err(), "{why}");
        }
        let prompt = Binding {
            method: "prompts/get",
            ..binding("t", &args, b"token-one-0123456789")
        };
        assert_eq!(
            key.open(&prompt, &state, 1000),
            Err(Unverified("another method or target"))
        );
        // Another process's key.
        assert_eq!(
            StateKey::random().open(&b, &state, 1000),
            Err(Unverified("mac"))
        );
    }

    /// A state made at one plugin endpoint (`/mcp/rt4`) does not verify at another
    /// (`/mcp/rt4b`) nor at `/mcp`, even for a tool of the same name and arguments, nor for
    /// another plugin behind the same endpoint (issue 37 item 5).
    #[test]
    fn a_state_is_bound_to_its_endpoint_and_plugin() {
        let key = StateKey::random();
        let args = json!({"n": 1});
        let b = binding("ask_seq", &args, b"");
        let state = key.seal(&b, &Map::new(), 1000).unwrap();
        for (endpoint, plugin) in [("rt4b", "rt4b"), ("rt4b", "rt4"), ("", "rt4"), ("rt4", "x")] {
            let other = Binding {
                endpoint,
                plugin,
                ..binding("ask_seq", &args, b"")
            };
            assert_eq!(
                key.open(&other, &state, 1000),
                Err(Unverified("another endpoint or plugin")),
                "{endpoint} {plugin}"
            );
        }
        assert!(key.open(&b, &state, 1000).is_ok());
    }

    /// A state is let through once: the same state again is refused while it would still
    /// verify, and two states of the same answers made in the same second differ (issue 37
    /// item 6).
    #[test]
    fn a_state_is_redeemed_once() {
        let key = StateKey::random();
        let args = json!({});
        let b = binding("t", &args, b"");
        let state = key.seal(&b, &Map::new(), 1000).unwrap();
        let again = key.seal(&b, &Map::new(), 1000).unwrap();
        assert_ne!(state, again, "a nonce tells them apart");
        assert_eq!(key.redeem(&b, &state, 1000), Ok(Map::new()));
        assert_eq!(
            key.redeem(&b, &state, 1001),
            Err(Redeem::Unverified(Unverified("used already")))
        );
        assert_eq!(key.redeem(&b, &again, 1001), Ok(Map::new()));
        // A state that does not verify is not recorded.
        assert!(key.redeem(&b, "x.y", 1001).is_err());
        assert_eq!(crate::sync::lock(&key.spent).by_mac.len(), 2);
    }

    /// The record is bounded: full of states not expired, a new one is refused (never let
    /// through unrecorded); expired ones leave, and make room.
    #[test]
    fn the_record_of_used_states_is_bounded() {
        let mut spent = Spent::default();
        for i in 0..MAX_SPENT {
            let mut mac = [0u8; 32];
            mac[..8].copy_from_slice(&(i as u64).to_le_bytes());
            // Half expire at 100, half at 200.
            let x = if i % 2 == 0 { 100 } else { 200 };
            spent.record(mac, x, 50).unwrap();
        }
        assert_eq!(spent.record([0xff; 32], 300, 60), Err(Redeem::Full));
        assert_eq!(spent.record([0xff; 32], 300, 150), Ok(()));
        assert_eq!(spent.by_mac.len(), MAX_SPENT / 2 + 1);
        assert_eq!(spent.by_expiry.len(), spent.by_mac.len());
    }

    #[test]
    fn a_changed_state_does_not_verify() {
        let key = StateKey::random();
        let args = json!({});
        let b = binding("t", &args, b"");
        let state = key.seal(&b, &Map::new(), 1000).unwrap();
        let (payload, mac) = state.split_once('.').unwrap();
        // The answers rewritten by the client, the MAC kept.
        let forged = json!({"v":2,"e":"rt4","p":"rt4","m":"tools/call","n":"t",
            "a":b.arguments_digest(),"x":99999,"i":"AAAA",
            "r":{"k":{"action":"accept","content":{"admin":true}}}});
        let forged = format!(
            "{}.{mac}",
            URL_SAFE_NO_PAD.encode(forged.to_string().as_bytes())
        );
        for bad in [
            format!("{state}-TAMPERED"),
            format!("{payload}x.{mac}"),
            payload.to_string(),
            forged,
            String::new(),
            "x".repeat(MAX_STATE_BYTES + 1),
        ] {
            assert!(key.open(&b, &bad, 1000).is_err(), "{bad:.40}");
        }
    }

    /// Replicas given the same file verify each other's states; a file others can read, or a
    /// short secret, is refused.
    #[cfg(unix)]
    #[test]
    fn replicas_sharing_a_key_file_verify_each_other() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.key");
        std::fs::write(&path, format!("{}\n", "k".repeat(40))).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let (one, two) = (
            StateKey::load(&path, true).unwrap(),
            StateKey::load(&path, true).unwrap(),
        );
        let args = json!({});
        let b = binding("t", &args, b"");
        let state = one.seal(&b, &Map::new(), 1000).unwrap();
        assert_eq!(two.open(&b, &state, 1000), Ok(Map::new()));
        assert!(StateKey::random().open(&b, &state, 1000).is_err());

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(matches!(
            StateKey::load(&path, true),
            Err(StateKeyError::Secret(crate::trust::SecretError::Readable {
                mode: 0o640,
                ..
            }))
        ));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, "short\n").unwrap();
        assert!(matches!(
            StateKey::load(&path, true),
            Err(StateKeyError::Short { len: 5, .. })
        ));
        assert!(matches!(
            StateKey::load(&dir.path().join("none"), true),
            Err(StateKeyError::Secret(
                crate::trust::SecretError::Read { .. }
            ))
        ));
    }

    #[test]
    fn a_state_over_the_limit_is_not_made() {
        let key = StateKey::random();
        let args = json!({});
        let b = binding("t", &args, b"");
        let mut answers = Map::new();
        answers.insert("k".into(), json!("x".repeat(MAX_STATE_BYTES)));
        assert_eq!(key.seal(&b, &answers, 0), None);
    }
}
