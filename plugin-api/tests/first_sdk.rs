//! Source compatibility with the first release, toolhost-plugin 0.1.0 (tag
//! `toolhost-plugin-v0.1.0`, main at ed01037): plugin sources written for it build unchanged
//! against this SDK and their tools answer as they did. `tests/first_sdk/template.rs` and
//! `text.rs` are that release's template and text plugin verbatim (each followed by a `main`
//! that checks the tools); `forms.rs` holds the other forms 0.1.0 accepted. A break of any of
//! them must be a decision: a new major version and a CHANGELOG line with its migration.

#[test]
fn plugins_written_for_the_first_sdk_build_and_answer_unchanged() {
    let t = trybuild::TestCases::new();
    t.pass("tests/first_sdk/*.rs");
}
