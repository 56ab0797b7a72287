//! Misuse of the SDK that must not compile, each with the message it gives (`tests/ui/*.stderr`;
//! `TRYBUILD=overwrite cargo test -p toolhost-plugin --test compile_fail` rewrites them after a
//! deliberate change of wording, to be read before committing).

#[test]
fn misuse_does_not_compile_and_says_what_to_write() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
