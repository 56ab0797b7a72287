//! `toolhost doctor`: the report printed, the exit code its verdict.

use std::process::ExitCode;

use crate::doctor::{self, Options};

pub fn doctor(options: &Options, as_json: bool) -> anyhow::Result<ExitCode> {
    let report = doctor::run(options);
    if as_json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_text());
    }
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
