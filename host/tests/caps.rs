//! A plugin's declarations are capped (issue 27 item 7): one declaring more tools, prompts or
//! resources than a plugin may is refused at load with an error naming the cap and its count,
//! and everything else keeps serving; one just under the caps loads. The `sprawl` fixture
//! declares as many as its environment says.

mod common;

use toolhost::model::{MAX_PROMPTS, MAX_RESOURCES, MAX_TOOLS};

/// `toolhost list` over calc and sprawl, sprawl declaring what `env` says: its stdout and
/// stderr together.
fn list(env: &[(&str, usize)]) -> String {
    let plugins = common::plugin_dir(&["calc", "sprawl"]);
    let mut cmd = common::toolhost(&["list"], plugins.path());
    for (k, v) in env {
        cmd.env(k, v.to_string());
    }
    let out = cmd.output().expect("run toolhost list");
    format!("{}{}", common::text(&out.stdout), common::text(&out.stderr))
}

#[test]
fn a_plugin_over_a_declaration_cap_is_refused_naming_it() {
    for (var, max, what) in [
        // `hello` is one tool beside SPRAWL_TOOLS.
        ("SPRAWL_TOOLS", MAX_TOOLS, "tools"),
        ("SPRAWL_PROMPTS", MAX_PROMPTS + 1, "prompts"),
        (
            "SPRAWL_RESOURCES",
            MAX_RESOURCES + 1,
            "resources and resource templates",
        ),
    ] {
        let out = list(&[(var, max)]);
        let cap = match what {
            "tools" => MAX_TOOLS,
            "prompts" => MAX_PROMPTS,
            _ => MAX_RESOURCES,
        };
        let said = format!(
            "it declares {} {what}; a plugin may declare at most {cap}",
            cap + 1
        );
        assert!(out.contains(&said), "{var}: {out}");
        assert!(out.contains("libsprawl"), "{out}");
        // The other plugin is served as ever.
        assert!(out.contains("calc ") && out.contains("add("), "{out}");
        assert!(!out.contains("sprawl 0.1.0"), "{out}");
    }
}

#[test]
fn a_plugin_just_under_the_caps_loads() {
    let out = list(&[
        ("SPRAWL_TOOLS", MAX_TOOLS - 1),
        ("SPRAWL_PROMPTS", MAX_PROMPTS),
        ("SPRAWL_RESOURCES", MAX_RESOURCES),
    ]);
    assert!(
        out.contains("sprawl 0.1.0"),
        "{}",
        &out[..out.len().min(2000)]
    );
    assert!(!out.contains("failed"), "{}", &out[..out.len().min(2000)]);
    assert!(out.contains(&format!("t{}()", MAX_TOOLS - 2)));
    assert!(out.contains(&format!("prompt p{}", MAX_PROMPTS - 1)));
}
