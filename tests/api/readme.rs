//! The README's curl walk-through, run as written against a real server.

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readme_walkthrough_works_as_written() {
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme
        .find("<!-- walkthrough:start -->")
        .expect("walkthrough start marker");
    let end = readme
        .find("<!-- walkthrough:end -->")
        .expect("walkthrough end marker");
    let block = &readme[start..end];
    let script = block
        .split("```sh\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("a sh block");
    assert!(script.contains("BASE=http://127.0.0.1:8000\n"));
    let script = script.replace(
        "BASE=http://127.0.0.1:8000\n",
        &format!("BASE={}\n", app.url("")),
    );
    let out = tokio::process::Command::new("bash")
        .arg("-euo")
        .arg("pipefail")
        .arg("-c")
        .arg(&script)
        .output()
        .await
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "walkthrough failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.to_ascii_lowercase().contains("x-cache: miss"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\"total\":1"),
        "the search finds the job: {stdout}"
    );
    assert!(stdout.contains("\"new_status\":\"reviewing\""), "{stdout}");
    assert!(stdout.contains("/problems/invalid-transition"), "{stdout}");
    // The application's confirmation and the move.
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM outbox").await, 2);
}
