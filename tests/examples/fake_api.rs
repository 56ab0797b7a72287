//! Runs the fake Messages API of the end-to-end tests on its own, for trying `toolhost chat` by
//! hand without a real model: prints the base URL, then serves until killed.
//!
//! ```sh
//! cargo run -p toolhost-e2e --example fake_api          # prints http://127.0.0.1:PORT
//! ANTHROPIC_BASE_URL=http://127.0.0.1:PORT ANTHROPIC_API_KEY=sk-test toolhost chat
//! > CALL [["mcp__faulty__slow",{"ms":5000}]]
//! ```
//!
//! It answers with the prompt-driven policy of `FakeApi::call_policy` (see tests/README.md).

use std::io::Write as _;

fn main() {
    let fake = toolhost_e2e::FakeApi::call_policy();
    println!("{}", fake.base_url());
    let _ = std::io::stdout().flush();
    loop {
        std::thread::park();
    }
}
