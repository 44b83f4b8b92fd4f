//! What every section of the benchmark returns: a table for the terminal, its figures as JSON,
//! and the targets it judged.

use serde::Serialize;

/// One section's results.
#[derive(Debug, Default, Serialize)]
pub struct Section {
    pub name: String,
    /// Column headers and rows, printed as an aligned table.
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Every figure, for the JSON report.
    pub json: serde_json::Value,
    pub targets: Vec<Target>,
    /// Lines printed under the table (what was measured, how).
    pub notes: Vec<String>,
    /// Query plans, printed after the notes as they are.
    pub plans: Vec<String>,
}

/// A target from the performance goals, judged on figures from this run.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub name: String,
    /// What was measured (a ratio or a value), and the bound it must meet.
    pub measured: f64,
    pub bound: f64,
    /// `">="` or `"<="`.
    pub relation: &'static str,
    /// How `measured` was formed, e.g. "12 345 req/s / 20 100 req/s".
    pub detail: String,
}

impl Target {
    pub fn at_least(name: &str, measured: f64, bound: f64, detail: String) -> Target {
        Target {
            name: name.into(),
            measured,
            bound,
            relation: ">=",
            detail,
        }
    }

    pub fn at_most(name: &str, measured: f64, bound: f64, detail: String) -> Target {
        Target {
            name: name.into(),
            measured,
            bound,
            relation: "<=",
            detail,
        }
    }

    pub fn met(&self) -> bool {
        match self.relation {
            ">=" => self.measured >= self.bound,
            _ => self.measured <= self.bound,
        }
    }
}

/// Prints `columns` and `rows` with each column as wide as its widest cell.
pub fn table(columns: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = columns.iter().map(|c| c.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths.get(i).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join(" | ")
            .trim_end()
            .to_string()
    };
    let mut out = String::new();
    out.push_str(&line(columns));
    out.push('\n');
    out.push_str(
        &widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("-|-"),
    );
    out.push('\n');
    for row in rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}
