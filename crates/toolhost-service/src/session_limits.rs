//! The limits of a session as command-line options, shared by `chat`, `serve` and `call`.

use std::time::Duration;

use crate::{
    executor::{ExecutorConfig, DEFAULT_PER_PLUGIN},
    handler::{
        RouterConfig, TaskLimits, DEFAULT_MAX_KEPT_TASKS, DEFAULT_MAX_RESULT_BYTES,
        DEFAULT_MAX_TASK_BYTES, DEFAULT_TIMEOUT, MAX_TASKS,
    },
    transport::DEFAULT_MAX_LINE_BYTES,
};

/// How long a call may run and how large its result may be.
#[derive(Debug, Clone, clap::Args)]
pub struct CallLimits {
    /// Default per-call timeout in seconds.
    #[arg(long, value_name = "SECS", value_parser = parse_secs,
          default_value_t = DEFAULT_TIMEOUT.as_secs_f64().into())]
    pub timeout: Secs,
    /// Per-plugin call timeout, `NAME=SECS`; repeatable.
    #[arg(long = "plugin-timeout", value_name = "NAME=SECS", value_parser = parse_plugin_timeout)]
    pub plugin_timeouts: Vec<(String, Secs)>,
    /// Largest tool result passed on, in bytes of JSON; bigger ones become an error.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_RESULT_BYTES)]
    pub max_result_bytes: usize,
    /// Calls of one plugin running at once; more wait their turn (their timeout runs).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PER_PLUGIN,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_calls_per_plugin: u64,
}

/// The call limits, and the longest message line read from the peer.
#[derive(Debug, Clone, clap::Args)]
pub struct SessionLimits {
    #[command(flatten)]
    pub call: CallLimits,
    /// Longest message line read, in bytes; a longer one is skipped and answered with an error.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
}

/// The MCP tasks `serve` keeps over every client (docs/deploy.md, "Memory and open files").
#[derive(Debug, Clone, clap::Args)]
pub struct TaskArgs {
    /// MCP tasks kept at once over every client, running or finished (each client holds at
    /// most 32): the oldest finished makes room; with none finished a new task is refused.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_KEPT_TASKS as u64,
          value_parser = clap::value_parser!(u64).range(MAX_TASKS as u64..=1_000_000))]
    pub max_tasks: u64,
    /// Bytes MCP tasks hold at once over every client (a running task's arguments, a
    /// finished one's result): past it the oldest finished tasks are forgotten; with none
    /// finished a new task is refused.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_TASK_BYTES)]
    pub max_task_bytes: usize,
}

impl TaskArgs {
    pub fn limits(&self) -> TaskLimits {
        TaskLimits {
            max_tasks: self.max_tasks as usize,
            max_bytes: self.max_task_bytes,
        }
    }
}

impl CallLimits {
    /// The router's configuration.
    pub fn router_config(&self) -> RouterConfig {
        RouterConfig {
            default_timeout: self.timeout.0,
            plugin_timeouts: self
                .plugin_timeouts
                .iter()
                .map(|(n, s)| (n.clone(), s.0))
                .collect(),
            max_result_bytes: self.max_result_bytes,
            executor: ExecutorConfig {
                per_plugin: self.max_calls_per_plugin as usize,
                ..ExecutorConfig::default()
            },
            tasks: TaskLimits::default(),
        }
    }
}

/// A positive number of seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Secs(pub Duration);

impl From<f64> for Secs {
    fn from(s: f64) -> Self {
        Secs(Duration::from_secs_f64(s))
    }
}

impl std::fmt::Display for Secs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.as_secs_f64())
    }
}

fn parse_secs(s: &str) -> Result<Secs, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if secs.is_finite() && secs > 0.0 {
        Ok(secs.into())
    } else {
        Err(format!(
            "a timeout must be a positive number of seconds, not {secs}"
        ))
    }
}

fn parse_plugin_timeout(s: &str) -> Result<(String, Secs), String> {
    let (name, secs) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=SECS, got `{s}`"))?;
    Ok((name.to_string(), parse_secs(secs)?))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        limits: SessionLimits,
        #[command(flatten)]
        tasks: TaskArgs,
    }

    fn parse_all(argv: &[&str]) -> Result<T, clap::Error> {
        T::try_parse_from(std::iter::once("t").chain(argv.iter().copied()))
    }

    fn parse(argv: &[&str]) -> Result<SessionLimits, clap::Error> {
        parse_all(argv).map(|t| t.limits)
    }

    #[test]
    fn defaults_and_overrides() {
        let l = parse(&[]).unwrap();
        let c = l.call.router_config();
        assert_eq!(c.default_timeout, Duration::from_secs(60));
        assert_eq!(c.max_result_bytes, 1 << 20);
        assert_eq!(l.max_line_bytes, 64 << 20);
        let l = parse(&[
            "--timeout",
            "2.5",
            "--plugin-timeout",
            "faulty=0.5",
            "--max-result-bytes",
            "5000",
            "--max-line-bytes",
            "100",
        ])
        .unwrap();
        let c = l.call.router_config();
        assert_eq!(c.default_timeout, Duration::from_millis(2500));
        assert_eq!(c.plugin_timeouts["faulty"], Duration::from_millis(500));
        assert!(!c.plugin_timeouts.contains_key("calc"));
        assert_eq!(c.max_result_bytes, 5000);
        assert_eq!(l.max_line_bytes, 100);
        for bad in [
            &["--timeout", "0"][..],
            &["--timeout=-1"],
            &["--timeout", "inf"],
            &["--plugin-timeout", "x"],
            &["--plugin-timeout", "x=-1"],
        ] {
            let e = parse(bad).err().unwrap().to_string();
            assert!(e.contains("seconds") || e.contains("NAME=SECS"), "{e}");
        }
    }

    #[test]
    fn task_limits_default_and_override() {
        assert_eq!(
            parse_all(&[]).unwrap().tasks.limits(),
            TaskLimits::default()
        );
        assert_eq!(TaskLimits::default().max_tasks, 1024);
        assert_eq!(TaskLimits::default().max_bytes, 256 << 20);
        let t = parse_all(&["--max-tasks", "64", "--max-task-bytes", "4096"]).unwrap();
        assert_eq!(
            t.tasks.limits(),
            TaskLimits {
                max_tasks: 64,
                max_bytes: 4096
            }
        );
        // Fewer than one client's tasks is refused.
        let e = parse_all(&["--max-tasks", "31"]).err().unwrap().to_string();
        assert!(e.contains("32"), "{e}");
    }
}
