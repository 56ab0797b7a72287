//! `toolhost doctor`: the report printed, the exit code its verdict.

use std::process::ExitCode;

use crate::{
    doctor::{self, Options},
    terminal,
};

pub fn doctor(options: &Options, as_json: bool) -> anyhow::Result<ExitCode> {
    let report = doctor::run(options);
    if as_json {
        terminal::out_line(format_args!("{}", serde_json::to_string_pretty(&report)?))?;
    } else {
        terminal::print_out(&report.to_text())?;
    }
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
