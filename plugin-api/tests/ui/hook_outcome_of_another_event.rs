use toolhost_plugin::{hooks::PostToolUse, prelude::*};

/// Too late to refuse: the tool ran.
#[hook(PostToolUse)]
fn audit(input: PostToolUse) -> HookOutcome<PostToolUse> {
    let _ = input;
    HookOutcome::deny("too late")
}

export_plugin!();

fn main() {}
