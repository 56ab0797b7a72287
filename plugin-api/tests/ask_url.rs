//! `Context::elicit_url` sends a person only to a page they can see the real host of: `https`
//! (or `http` to this machine) with no user name before the host (issue 37 item 16). Anything
//! else fails with `AskError::Invalid` before anyone is asked.

use toolhost_plugin::{testing::TestContext, AskError, Elicited};

#[test]
fn elicit_url_refuses_what_is_no_page_to_open() {
    for url in [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "data:text/html,<b>hi</b>",
        "not a url",
        "https://accounts.google.com@evil.example/",
        "http://example.com/",
    ] {
        let ctx = TestContext::new().decline_next();
        match ctx.elicit_url("Sign in", url) {
            Err(AskError::Invalid { problem }) => {
                assert!(
                    problem.starts_with("the URL of question `ask` "),
                    "{url}: {problem}"
                )
            }
            other => panic!("{url}: {other:?}"),
        }
        assert!(ctx.asks().is_empty(), "{url} was asked");
    }
    for url in ["https://login.example/a?b=1", "http://localhost:8080/cb"] {
        let ctx = TestContext::new().decline_next();
        assert_eq!(
            ctx.elicit_url("Sign in", url),
            Ok(Elicited::Decline),
            "{url}"
        );
        assert_eq!(ctx.asks()[0]["params"]["url"], url);
    }
}
