//! Companies and members: roles, membership-based visibility, merge patches, the last-member rule.

use crate::each_store;
use crate::helpers::*;
use serde_json::json;

each_store!(company_lifecycle, company_visibility_and_roles, members);

async fn company_lifecycle(app: TestApp) {
    let e = app.user("employer").await;
    let r = app
        .post("/api/companies", Some(&e.token), json!({"name": " Acme ", "website": "https://acme.example", "description": "We make things"}))
        .await;
    let c = r.expect(201).clone();
    assert_eq!(c["name"], "Acme");
    assert_eq!(c["website"], "https://acme.example");
    let id = c["id"].as_i64().unwrap();
    let path = format!("/api/companies/{id}");

    let bad = app
        .post(
            "/api/companies",
            Some(&e.token),
            json!({"name": "", "website": "ftp://x"}),
        )
        .await;
    let p = bad.expect_problem(422, "validation");
    assert!(p["errors"]["name"].is_array() && p["errors"]["website"].is_array());

    // Public read.
    assert_eq!(app.get(&path, None).await.expect(200)["name"], "Acme");
    // Merge patch: absent stays, null clears.
    let r = app
        .patch(
            &path,
            Some(&e.token),
            json!({"website": null, "description": "New"}),
        )
        .await;
    let b = r.expect(200);
    assert_eq!(b["name"], "Acme");
    assert!(b["website"].is_null());
    assert_eq!(b["description"], "New");
    app.patch(&path, Some(&e.token), json!({"name": null}))
        .await
        .expect_problem(422, "validation");
    app.patch(&path, Some(&e.token), json!({"id": 5}))
        .await
        .expect_problem(422, "validation");

    // Delete refused while it has jobs, closed ones included.
    let job = app.job(&e, id, json!({})).await;
    let job_id = job["id"].as_i64().unwrap();
    app.patch(
        &format!("/api/jobs/{job_id}"),
        Some(&e.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    app.delete(&path, Some(&e.token))
        .await
        .expect_problem(409, "company-has-jobs");
    app.delete(&format!("/api/jobs/{job_id}"), Some(&e.token))
        .await
        .expect(204);
    app.delete(&path, Some(&e.token)).await.expect(204);
    app.get(&path, None).await.expect_problem(404, "not-found");
    // Ids are never reused.
    let again = app.company(&e, "Acme again").await;
    assert!(again > id);
}

async fn company_visibility_and_roles(app: TestApp) {
    let a = app.user("employer").await;
    let b = app.user("employer").await;
    let cand = app.user("candidate").await;
    let ca = app.company(&a, "A Corp").await;
    let cb = app.company(&b, "B Corp").await;
    app.post("/api/companies", Some(&cand.token), json!({"name": "Nope"}))
        .await
        .expect_problem(403, "forbidden");
    app.post("/api/companies", None, json!({"name": "Nope"}))
        .await
        .expect(401);

    // An employer lists their own companies; anyone else sees all.
    let mine = app.get("/api/companies", Some(&a.token)).await;
    let ids: Vec<i64> = mine.expect(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![ca]);
    assert_eq!(mine.body["total"], 1);
    let all = app.get("/api/companies", None).await;
    assert_eq!(all.expect(200)["total"], 2);
    let all = app
        .get("/api/companies?page=1&page_size=1", Some(&cand.token))
        .await;
    assert_eq!(all.expect(200)["items"].as_array().unwrap().len(), 1);
    assert_eq!(all.body["page_size"], 1);
    app.get("/api/companies?page_size=101", None)
        .await
        .expect_problem(422, "validation");

    // Non-members get 404 on every member-only endpoint; candidates 403.
    let other = format!("/api/companies/{cb}");
    app.patch(&other, Some(&a.token), json!({"name": "Mine now"}))
        .await
        .expect_problem(404, "not-found");
    app.delete(&other, Some(&a.token))
        .await
        .expect_problem(404, "not-found");
    app.get(&format!("{other}/members"), Some(&a.token))
        .await
        .expect_problem(404, "not-found");
    app.post(
        &format!("{other}/members"),
        Some(&a.token),
        json!({"email": a.email}),
    )
    .await
    .expect_problem(404, "not-found");
    app.patch(&other, Some(&cand.token), json!({"name": "x"}))
        .await
        .expect_problem(403, "forbidden");
    // The same 404 for a company that does not exist.
    app.patch(
        "/api/companies/999999",
        Some(&a.token),
        json!({"name": "x"}),
    )
    .await
    .expect_problem(404, "not-found");
    assert_eq!(app.get(&other, None).await.expect(200)["name"], "B Corp");
}

async fn members(app: TestApp) {
    let a = app.user("employer").await;
    let b = app.user("employer").await;
    let cand = app.user("candidate").await;
    let c = app.company(&a, "Team").await;
    let members = format!("/api/companies/{c}/members");

    let unknown = app
        .post(
            &members,
            Some(&a.token),
            json!({"email": "ghost@example.com"}),
        )
        .await;
    let not_employer = app
        .post(&members, Some(&a.token), json!({"email": cand.email}))
        .await;
    unknown.expect_problem(422, "validation");
    assert_eq!(unknown.text, not_employer.text, "the same answer for both");
    // An address the mailer could not send to is refused as such, not looked up.
    let unsendable = app
        .post(
            &members,
            Some(&a.token),
            json!({"email": "a,b@example.com"}),
        )
        .await;
    let p = unsendable.expect_problem(422, "validation");
    assert!(
        p["errors"]["email"][0]
            .as_str()
            .is_some_and(|m| m.contains("email address")),
        "{}",
        unsendable.text
    );

    app.post(
        &members,
        Some(&a.token),
        json!({"email": b.email.to_uppercase()}),
    )
    .await
    .expect(204);
    app.post(&members, Some(&a.token), json!({"email": b.email}))
        .await
        .expect(204);
    let list = app.get(&members, Some(&b.token)).await;
    let ids: Vec<i64> = list
        .expect(200)
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![a.id, b.id]);
    assert_eq!(list.body[0]["email"], a.email);

    // b, now a member, sees the company in their list and can manage it.
    assert_eq!(
        app.get("/api/companies", Some(&b.token)).await.expect(200)["total"],
        1
    );
    app.delete(&format!("{members}/{}", a.id), Some(&b.token))
        .await
        .expect(204);
    app.get(&members, Some(&a.token)).await.expect(404);
    app.delete(&format!("{members}/{}", b.id), Some(&b.token))
        .await
        .expect_problem(409, "last-member");
    app.delete(&format!("{members}/{}", cand.id), Some(&b.token))
        .await
        .expect_problem(404, "not-found");
    app.delete(&format!("{members}/abc"), Some(&b.token))
        .await
        .expect(404);
}
