//! Jobs: publishing by company members, validation, JSON Merge Patch, deletion.

use crate::each_store;
use crate::helpers::*;
use serde_json::json;

each_store!(
    job_create_rules,
    job_patch_is_a_merge_patch,
    job_delete_takes_applications,
    job_reads_are_public
);

async fn job_create_rules(app: TestApp) {
    let e = app.user("employer").await;
    let other = app.user("employer").await;
    let cand = app.user("candidate").await;
    let c = app.company(&e, "Acme").await;
    let job = app
        .job(&e, c, json!({"title": "  Rust Engineer ", "salary_min": 0, "salary_max": 1_000_000_000, "remote": true}))
        .await;
    assert_eq!(job["title"], "Rust Engineer");
    assert_eq!(job["status"], "open");
    assert_eq!(job["company"], json!({"id": c, "name": "Acme"}));
    assert_eq!(job["salary_max"], 1_000_000_000);
    assert_eq!(job["created_at"], job["updated_at"]);

    let valid = json!({"company_id": c, "title": "T", "description": "", "location": "", "remote": false, "employment_type": "contract"});
    app.post("/api/jobs", Some(&e.token), valid.clone())
        .await
        .expect(201);
    app.post("/api/jobs", Some(&cand.token), valid.clone())
        .await
        .expect_problem(403, "forbidden");
    app.post("/api/jobs", Some(&other.token), valid.clone())
        .await
        .expect_problem(404, "not-found");
    // Visibility first: a non-member learns nothing from a body that is also invalid.
    let mut bad_for_other = valid.clone();
    bad_for_other["title"] = json!("");
    app.post("/api/jobs", Some(&other.token), bad_for_other)
        .await
        .expect_problem(404, "not-found");

    for (field, value) in [
        ("title", json!("")),
        ("title", json!("x".repeat(201))),
        ("description", json!("x".repeat(20_001))),
        ("location", json!("x".repeat(201))),
        ("employment_type", json!("boss")),
        ("salary_min", json!(-1)),
        ("salary_max", json!(1_000_000_001)),
        ("salary_min", json!(1.5)),
        ("remote", json!("yes")),
        ("status", json!("open")),
        ("wage", json!(5)),
    ] {
        let mut body = valid.clone();
        body[field] = value.clone();
        let r = app.post("/api/jobs", Some(&e.token), body).await;
        assert!(
            r.expect_problem(422, "validation")["errors"][field].is_array(),
            "{field}={value}: {}",
            r.text
        );
    }
    let mut body = valid.clone();
    body["salary_min"] = json!(100);
    body["salary_max"] = json!(99);
    let r = app.post("/api/jobs", Some(&e.token), body).await;
    assert!(r.expect_problem(422, "validation")["errors"]["salary_min"].is_array());
    // Without `remote` nor `workplace`, the job has no workplace.
    let mut body = valid.clone();
    body.as_object_mut().unwrap().remove("remote");
    let r = app.post("/api/jobs", Some(&e.token), body).await;
    assert!(
        r.expect_problem(422, "validation")["errors"]["workplace"].is_array(),
        "{}",
        r.text
    );
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM jobs").await, 2);
}

async fn job_patch_is_a_merge_patch(app: TestApp) {
    let e = app.user("employer").await;
    let other = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app
        .job(&e, c, json!({"salary_min": 10, "salary_max": 20}))
        .await;
    let path = format!("/api/jobs/{}", job["id"]);

    let r = app
        .patch(
            &path,
            Some(&e.token),
            json!({"title": "Staff Engineer", "salary_max": null}),
        )
        .await;
    let b = r.expect(200).clone();
    assert_eq!(b["title"], "Staff Engineer");
    assert_eq!(b["salary_min"], 10, "absent fields stay");
    assert!(b["salary_max"].is_null(), "null clears");
    assert_eq!(b["description"], job["description"]);
    assert!(b["updated_at"].as_str() > job["updated_at"].as_str());
    assert_eq!(b["created_at"], job["created_at"]);

    for field in ["id", "company", "company_id", "created_at", "updated_at"] {
        let r = app.patch(&path, Some(&e.token), json!({field: 1})).await;
        assert!(
            r.expect_problem(422, "validation")["errors"][field].is_array(),
            "{field}"
        );
    }
    app.patch(&path, Some(&e.token), json!({"colour": "red"}))
        .await
        .expect_problem(422, "validation");
    app.patch(&path, Some(&e.token), json!({"title": null}))
        .await
        .expect_problem(422, "validation");
    app.patch(&path, Some(&e.token), json!({"status": "archived"}))
        .await
        .expect_problem(422, "validation");
    app.patch(
        &path,
        Some(&e.token),
        json!({"salary_min": 30, "salary_max": 25}),
    )
    .await
    .expect_problem(422, "validation");
    // The refused patches changed nothing.
    assert_eq!(
        app.get(&path, None).await.expect(200)["title"],
        "Staff Engineer"
    );

    // open <-> closed
    assert_eq!(
        app.patch(&path, Some(&e.token), json!({"status": "closed"}))
            .await
            .expect(200)["status"],
        "closed"
    );
    assert_eq!(
        app.patch(&path, Some(&e.token), json!({"status": "open"}))
            .await
            .expect(200)["status"],
        "open"
    );

    app.patch(&path, Some(&other.token), json!({"title": "Mine"}))
        .await
        .expect_problem(404, "not-found");
    app.delete(&path, Some(&other.token))
        .await
        .expect_problem(404, "not-found");
    app.patch("/api/jobs/424242", Some(&e.token), json!({"title": "x"}))
        .await
        .expect_problem(404, "not-found");
}

async fn job_delete_takes_applications(app: TestApp) {
    let s = app.scenario().await;
    app.patch(
        &format!("/api/applications/{}", s.application_id),
        Some(&s.employer.token),
        json!({"status": "reviewing"}),
    )
    .await
    .expect(200);
    let outbox_before = app.scalar_i64("SELECT COUNT(*) FROM outbox").await;
    app.delete(&format!("/api/jobs/{}", s.job_id), Some(&s.employer.token))
        .await
        .expect(204);
    app.get(&format!("/api/jobs/{}", s.job_id), None)
        .await
        .expect(404);
    app.get(
        &format!("/api/applications/{}", s.application_id),
        Some(&s.candidate.token),
    )
    .await
    .expect(404);
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM applications").await, 0);
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM application_history")
            .await,
        0
    );
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM outbox").await,
        outbox_before,
        "deleting a job emits no event"
    );
}

async fn job_reads_are_public(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({})).await;
    let path = format!("/api/jobs/{}", job["id"]);
    app.patch(&path, Some(&e.token), json!({"status": "closed"}))
        .await
        .expect(200);
    let r = app.get(&path, None).await;
    assert_eq!(
        r.expect(200)["status"],
        "closed",
        "closed jobs stay readable"
    );
    for key in [
        "id",
        "company",
        "title",
        "description",
        "location",
        "remote",
        "salary_min",
        "salary_max",
        "employment_type",
        "status",
        "created_at",
        "updated_at",
    ] {
        assert!(r.body.get(key).is_some(), "{key} present (null when empty)");
    }
}
