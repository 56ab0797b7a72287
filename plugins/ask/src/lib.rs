//! Each way a tool talks back to its client while it runs, blocking until the answer comes:
//! a form the user fills in (`confirm`), a URL the user opens (`sign_in`), a completion from
//! the client's model (`summarize`), the client's roots (`workspace`), and several questions
//! in one round (`introduce`).
//!
//! A client answers only what it declared: Claude Code declares forms, URLs and roots but not
//! sampling, so `summarize` reads `ctx.client()` and falls back to its own cut there. Where a
//! question cannot be asked (the client did not declare it, the front end cannot ask), the
//! tool's error says why.

use serde::Deserialize;
use toolhost_plugin::{prelude::*, Asks, SampleRequest};

/// The confirmation form.
#[derive(Deserialize, JsonSchema)]
pub struct Confirmation {
    /// Go ahead?
    pub sure: bool,
    /// Why (optional).
    pub reason: Option<String>,
}

/// Ask the user to confirm an action before it is taken.
#[tool]
pub fn confirm(
    /// What is about to happen, in a few words.
    action: String,
    ctx: &Context,
) -> Result<String, AskError> {
    let asked = ctx.elicit::<Confirmation>(&format!("Really {action}?"))?;
    Ok(match asked {
        Elicited::Accept(Confirmation { sure: true, reason }) => match reason {
            Some(r) => format!("confirmed: {action} ({r})"),
            None => format!("confirmed: {action}"),
        },
        Elicited::Accept(_) | Elicited::Decline => format!("not confirmed: {action}"),
        Elicited::Cancel => "the user dismissed the question".into(),
    })
}

/// Ask the user to sign in to a service in their browser (the secret never passes through the
/// client or the model).
#[tool]
pub fn sign_in(
    /// The service's sign-in page.
    url: String,
    ctx: &Context,
) -> Result<String, AskError> {
    Ok(match ctx.elicit_url("Sign in to continue", &url)? {
        Elicited::Accept(()) => "the user opened the sign-in page".into(),
        Elicited::Decline | Elicited::Cancel => "the user did not sign in".into(),
    })
}

/// Summarize a text with the client's model, or cut it to its first sentence when the client
/// cannot sample.
#[tool]
pub fn summarize(
    /// The text.
    text: String,
    ctx: &Context,
) -> Result<String, AskError> {
    if !ctx.client().sampling {
        let first = text.split_inclusive('.').next().unwrap_or_default();
        return Ok(format!("(cut, the client cannot sample) {}", first.trim()));
    }
    let request = SampleRequest::text(format!("Summarize in one sentence:\n\n{text}"))
        .system_prompt("You write short, plain summaries.")
        .max_tokens(100);
    let reply = ctx.sample(request)?;
    Ok(reply.as_text().unwrap_or_default().to_string())
}

/// The folders the client works in (its roots).
#[tool(read_only)]
pub fn workspace(ctx: &Context) -> Result<String, AskError> {
    let roots = ctx.roots()?;
    if roots.is_empty() {
        return Ok("the client shares no folders".into());
    }
    let lines: Vec<String> = roots
        .iter()
        .map(|r| match (r.path(), &r.name) {
            (Some(p), Some(n)) => format!("{n}: {}", p.display()),
            (Some(p), None) => p.display().to_string(),
            (None, _) => r.uri.clone(),
        })
        .collect();
    Ok(lines.join("\n"))
}

/// Who the user is.
#[derive(Deserialize, JsonSchema)]
pub struct Who {
    /// Your name.
    pub name: String,
}

/// Greet the user in their first folder: their name and the client's roots, asked in one
/// round (one form for the user; both sent together).
#[tool]
pub fn introduce(ctx: &Context) -> Result<String, AskError> {
    let answers = ctx.ask(
        Asks::new()
            .elicit::<Who>("who", "What is your name?")
            .roots("roots"),
    )?;
    let name = match answers.elicited::<Who>("who")? {
        Elicited::Accept(who) => who.name,
        _ => "stranger".into(),
    };
    let roots = answers.roots("roots")?;
    Ok(match roots.first() {
        Some(root) => format!("Hello {name}, working in {}", root.uri),
        None => format!("Hello {name}"),
    })
}

export_plugin!();

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolhost_plugin::{testing::TestContext, ClientCaps, Root, SampleResult};

    use super::*;

    fn text(r: ToolResult) -> String {
        match &r.content[0] {
            Content::Text(text) => text.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn confirm_asks_a_form_and_reads_each_answer() {
        let ctx = TestContext::new()
            .answer_elicit(json!({"sure": true, "reason": "old"}))
            .answer_elicit(json!({"sure": false}))
            .decline_next()
            .cancel_next();
        let call = || text(confirm::tool().call(json!({"action": "drop the table"}), &ctx));
        assert_eq!(call(), "confirmed: drop the table (old)");
        assert_eq!(call(), "not confirmed: drop the table");
        assert_eq!(call(), "not confirmed: drop the table");
        assert_eq!(call(), "the user dismissed the question");
        let form = &ctx.asks()[0]["params"]["requestedSchema"];
        assert_eq!(form["required"], json!(["sure"]));
        assert_eq!(form["properties"]["reason"]["type"], "string");
    }

    #[test]
    fn sign_in_sends_the_url() {
        let ctx = TestContext::new().answer_elicit(json!({}));
        let r = sign_in::tool().call(json!({"url": "https://example.com/login"}), &ctx);
        assert_eq!(text(r), "the user opened the sign-in page");
        assert_eq!(ctx.asks()[0]["params"]["mode"], "url");
        assert_eq!(ctx.asks()[0]["params"]["url"], "https://example.com/login");
    }

    #[test]
    fn summarize_samples_or_falls_back_without_sampling() {
        let ctx = TestContext::new().answer_sample(SampleResult::text("Tea is calming."));
        let args = json!({"text": "Tea is a drink. It calms."});
        assert_eq!(
            text(summarize::tool().call(args.clone(), &ctx)),
            "Tea is calming."
        );
        assert_eq!(ctx.asks()[0]["params"]["maxTokens"], 100);
        // Claude Code declares no sampling.
        let cc = ClientCaps::none()
            .with_elicitation_form(true)
            .with_elicitation_url(true)
            .with_roots(true);
        let ctx = TestContext::new().with_client(cc);
        assert_eq!(
            text(summarize::tool().call(args, &ctx)),
            "(cut, the client cannot sample) Tea is a drink."
        );
        assert!(ctx.asks().is_empty());
    }

    #[test]
    fn workspace_and_introduce_read_the_roots() {
        let ctx = TestContext::new()
            .with_roots([Root::new("file:///home/ann/src%20code").named("src")])
            .answer_elicit(json!({"name": "Ann"}));
        assert_eq!(
            text(workspace::tool().call(json!({}), &ctx)),
            "src: /home/ann/src code"
        );
        assert_eq!(
            text(introduce::tool().call(json!({}), &ctx)),
            "Hello Ann, working in file:///home/ann/src%20code"
        );
        // A client without roots: the tool's error says so.
        let ctx = TestContext::new().with_client(ClientCaps::none());
        let r = workspace::tool().call(json!({}), &ctx);
        assert!(r.is_error);
        assert!(text(r).contains("`roots`"));
    }
}
