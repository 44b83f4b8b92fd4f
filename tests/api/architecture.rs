//! The module map in `src/lib.rs` is a table of who may use whom; this checks that every
//! `crate::` path in `src/` keeps to it, so the map stays true as the code changes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The table's rows: module → the modules it may use.
fn allowed() -> BTreeMap<String, BTreeSet<String>> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut map = BTreeMap::new();
    for line in lib.lines() {
        let Some(row) = line.strip_prefix("//! | `") else {
            continue;
        };
        let cells: Vec<&str> = row.split('|').collect();
        let module = cells[0].trim().trim_end_matches('`').to_string();
        let uses = cells[2]
            .split_whitespace()
            .map(|m| m.trim_matches('`').to_string())
            .collect();
        map.insert(module, uses);
    }
    map
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a file names through `crate::` (or `$crate::` in a macro), including
/// those inside a `crate::{a, b::c}` group.
fn used_modules(text: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (i, _) in text.match_indices("crate::") {
        if i > 0 && text[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue; // e.g. `async_trait::` never matches, but `mycrate::` must not either
        }
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let name = ident(part.trim());
                if !name.is_empty() {
                    used.insert(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                used.insert(name);
            }
        }
    }
    used
}

#[test]
fn every_module_uses_only_what_the_map_allows() {
    let allowed = allowed();
    assert!(
        allowed.len() >= 10,
        "the module map in src/lib.rs was not found: {allowed:?}"
    );
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let declared: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect();
    let mapped: BTreeSet<String> = allowed.keys().cloned().collect();
    assert_eq!(declared, mapped, "every module has one row in the map");

    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut broken = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src()).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let may = &allowed[&module];
        for used in used_modules(&text) {
            if used != module && !may.contains(&used) {
                broken.push(format!("{} uses {used}", rel.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "imports the map in src/lib.rs does not allow:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_checker_sees_grouped_and_macro_paths() {
    let used = used_modules(
        "use crate::{store::Store, domain};\nfn f() { $crate::worker::x(); crate::run::y() }",
    );
    let want: BTreeSet<String> = ["store", "domain", "worker", "run"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(used, want);
}

#[test]
fn no_source_file_is_over_400_lines_unless_the_readme_says_why() {
    let code_map = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join("architecture.md");
    let readme = std::fs::read_to_string(code_map).unwrap();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut long = Vec::new();
    for file in files {
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        let rel = format!("src/{}", file.strip_prefix(src()).unwrap().display());
        if lines > 400 && !readme.contains(&format!("`{rel}`")) {
            long.push(format!("{rel}: {lines} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "files over 400 lines that the code map of docs/architecture.md does not explain:\n{}",
        long.join("\n")
    );
}

/// One clock: the store stamps and judges by the database's clock, read in the write's
/// transaction by `S::clock` (`src/store/sql/mod.rs`, which reads this process's clock only for
/// SQLite, whose clock it is), and the worker's upkeep by the database's clock it reads through
/// the store. No other file of either reads the host's wall clock.
#[test]
fn the_store_and_the_worker_read_no_clock_but_the_databases() {
    let clock = src().join("store").join("sql").join("mod.rs");
    let mut files = Vec::new();
    rust_files(&src().join("store"), &mut files);
    rust_files(&src().join("worker"), &mut files);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let reads = [
                "Utc::now(",
                "timefmt::now(",
                "SystemTime::now(",
                "Local::now(",
            ]
            .iter()
            .any(|c| code.contains(c));
            if reads && !(file == clock && code.contains("crate::timefmt::now()")) {
                let rel = file.strip_prefix(src()).unwrap().display().to_string();
                found.push(format!("src/{rel}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the host's clock read where the database's must be:\n{}",
        found.join("\n")
    );
}
