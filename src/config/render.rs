//! What the definition shows a person: the `--help` table of the variables, and a clap error
//! turned into the one start-up line.

use super::{ConfigError, command, err, variables};
use clap::error::{ContextKind, ContextValue, ErrorKind};

/// The variables, their defaults and meaning, for `--help`.
pub fn help() -> String {
    let cmd = command(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let width = variables(&cmd)
        .iter()
        .map(|(v, _)| v.len())
        .max()
        .unwrap_or(0);
    let mut out =
        String::from("Environment (defaults in brackets; an empty variable counts as unset):");
    for arg in cmd.get_arguments() {
        let Some(var) = arg.get_env().and_then(|v| v.to_str()) else {
            continue;
        };
        let words: Vec<String> = arg
            .get_possible_values()
            .iter()
            .map(|p| p.get_name().to_string())
            .collect();
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        let mut text = match (words.is_empty(), help.is_empty()) {
            (true, _) => help,
            (false, true) => words.join(" | "),
            (false, false) => format!("{}: {help}", words.join(" | ")),
        };
        let defaults: Vec<_> = arg
            .get_default_values()
            .iter()
            .map(|d| d.to_string_lossy())
            .collect();
        if !defaults.is_empty() {
            text.push_str(&format!(" [{}]", defaults.join(",")));
        }
        out.push_str(&format!("\n  {var:<width$}  {text}"));
    }
    out
}

/// A clap error as the one line: the variable its argument reads, and the rule. Never clap's
/// own rendering, which repeats the value (perhaps a secret) and adds a usage dump.
pub(super) fn from_clap(e: &clap::Error, table: &[(String, String)]) -> ConfigError {
    let context = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    // The argument reads as `--long <VALUE>`.
    let var = context(ContextKind::InvalidArg)
        .and_then(|arg| {
            let long = arg.trim_start_matches('-').split([' ', '=']).next()?;
            table
                .iter()
                .find(|(_, l)| l == long)
                .map(|(v, _)| v.as_str())
        })
        .unwrap_or("environment");
    let message = match e.kind() {
        ErrorKind::ValueValidation => std::error::Error::source(e)
            .map(|s| s.to_string())
            .unwrap_or_else(|| "is not valid".into()),
        ErrorKind::InvalidValue => {
            let words = match e.get(ContextKind::ValidValue) {
                Some(ContextValue::Strings(w)) => w.join(", "),
                _ => String::new(),
            };
            let got = context(ContextKind::InvalidValue).unwrap_or_default();
            format!("must be one of {words} (got {got:?})")
        }
        kind => kind.as_str().unwrap_or("is not valid").to_string(),
    };
    err(var, message)
}
