//! The authorization matrix: every endpoint × {anonymous, the candidate, another candidate, a
//! member of the company, another company's member, an operator}, with the status each must
//! get, from one table. The operator is a candidate given operator rights: outside
//! `/api/admin/*` it has a candidate's rights and no more. Each row runs on a fresh scenario; the callers go in the table's column order, the
//! refused ones first, and every refused call is checked to have changed nothing in the database.

use crate::each_store;
use crate::helpers::*;
use reqwest::Method;
use serde_json::{Value, json};

each_store!(every_endpoint_answers_each_caller_as_the_table_says);

/// The callers, in the order they call.
const CALLERS: [&str; 6] = [
    "anonymous",
    "other candidate",
    "other member",
    "operator",
    "candidate",
    "member",
];

/// One row: method, path (`{c}` company, `{j}` job, `{a}` application, `{m}` the member's user
/// id, `{u}` the token of the member's digest unsubscribe link, `{e}` the application's
/// status-change event, `{d}` a dead letter), body, and the status for each caller of [`CALLERS`].
type Row = (Method, &'static str, Option<Value>, [u16; 6]);

fn table() -> Vec<Row> {
    use Method as M;
    let job = json!({"company_id": "{c}", "title": "Another", "description": "d", "location": "l",
        "remote": false, "employment_type": "full_time"});
    vec![
        //                                                     anon oth-c oth-m oper cand member
        (M::GET, "/api/me", None, [401, 200, 200, 200, 200, 200]),
        (
            M::POST,
            "/api/alerts",
            Some(json!({"search": {"q": "rust"}, "frequency": "daily"})),
            [401, 201, 403, 201, 201, 403],
        ),
        (M::GET, "/api/alerts", None, [401, 200, 200, 200, 200, 200]),
        (
            M::GET,
            "/api/me/notifications",
            None,
            [401, 200, 200, 200, 200, 200],
        ),
        (
            M::PATCH,
            "/api/me/notifications",
            Some(json!({"application_digest": false})),
            [401, 200, 200, 200, 200, 200],
        ),
        // The member's unsubscribe link: the token in it is the authority, whoever follows it.
        (
            M::GET,
            "/api/unsubscribe/{u}",
            None,
            [200, 200, 200, 200, 200, 200],
        ),
        (
            M::POST,
            "/api/unsubscribe/{u}",
            None,
            [200, 200, 200, 200, 200, 200],
        ),
        (
            M::GET,
            "/api/companies",
            None,
            [200, 200, 200, 200, 200, 200],
        ),
        (
            M::GET,
            "/api/companies/{c}",
            None,
            [200, 200, 200, 200, 200, 200],
        ),
        (
            M::POST,
            "/api/companies",
            Some(json!({"name": "New"})),
            [401, 403, 201, 403, 403, 201],
        ),
        (
            M::PATCH,
            "/api/companies/{c}",
            Some(json!({"name": "Renamed"})),
            [401, 403, 404, 403, 403, 200],
        ),
        (
            M::DELETE,
            "/api/companies/{c}",
            None,
            [401, 403, 404, 403, 403, 409],
        ),
        (
            M::GET,
            "/api/companies/{c}/members",
            None,
            [401, 403, 404, 403, 403, 200],
        ),
        (
            M::POST,
            "/api/companies/{c}/members",
            Some(json!({"email": "{other_member_email}"})),
            [401, 403, 404, 403, 403, 204],
        ),
        (
            M::DELETE,
            "/api/companies/{c}/members/{m}",
            None,
            [401, 403, 404, 403, 403, 409],
        ),
        (
            M::POST,
            "/api/jobs",
            Some(job),
            [401, 403, 404, 403, 403, 201],
        ),
        (M::GET, "/api/jobs", None, [200, 200, 200, 200, 200, 200]),
        (
            M::GET,
            "/api/jobs/{j}",
            None,
            [200, 200, 200, 200, 200, 200],
        ),
        (
            M::PATCH,
            "/api/jobs/{j}",
            Some(json!({"title": "Renamed"})),
            [401, 403, 404, 403, 403, 200],
        ),
        (
            M::DELETE,
            "/api/jobs/{j}",
            None,
            [401, 403, 404, 403, 403, 204],
        ),
        (
            M::POST,
            "/api/jobs/{j}/applications",
            Some(json!({})),
            [401, 201, 403, 201, 409, 403],
        ),
        (
            M::POST,
            "/api/jobs/{j}/renew",
            None,
            [401, 403, 404, 403, 403, 200],
        ),
        (
            M::GET,
            "/api/applications",
            None,
            [401, 200, 200, 200, 200, 200],
        ),
        (
            M::GET,
            "/api/applications/{a}",
            None,
            [401, 404, 404, 404, 200, 200],
        ),
        (
            M::GET,
            "/api/applications/{a}/history",
            None,
            [401, 404, 404, 404, 200, 200],
        ),
        (
            M::PATCH,
            "/api/applications/{a}",
            Some(json!({"status": "reviewing"})),
            [401, 403, 404, 403, 403, 200],
        ),
        (
            M::POST,
            "/api/applications/{a}/withdraw",
            Some(json!({})),
            [401, 404, 403, 404, 200, 403],
        ),
        (
            M::DELETE,
            "/api/applications/{a}",
            None,
            [401, 404, 403, 404, 204, 403],
        ),
        // Operators only; everyone else finds nothing there.
        (
            M::GET,
            "/api/admin/queue",
            None,
            [404, 404, 404, 200, 404, 404],
        ),
        (
            M::GET,
            "/api/admin/dead-letters",
            None,
            [404, 404, 404, 200, 404, 404],
        ),
        (
            M::GET,
            "/api/admin/events/{e}",
            None,
            [404, 404, 404, 200, 404, 404],
        ),
        (
            M::POST,
            "/api/admin/dead-letters/redrive",
            Some(json!({"ids": ["{d}"]})),
            [404, 404, 404, 200, 404, 404],
        ),
        (
            M::DELETE,
            "/api/admin/dead-letters/{d}",
            None,
            [404, 404, 404, 204, 404, 404],
        ),
        (
            M::GET,
            "/api/admin/jobs",
            None,
            [404, 404, 404, 200, 404, 404],
        ),
        // The scenario's job is open: only a job waiting for review is approved or rejected.
        (
            M::POST,
            "/api/admin/jobs/{j}/approve",
            None,
            [404, 404, 404, 409, 404, 404],
        ),
        (
            M::POST,
            "/api/admin/jobs/{j}/reject",
            Some(json!({"reason": "Not a real job"})),
            [404, 404, 404, 409, 404, 404],
        ),
        // A method the route does not take: only an operator learns that the route exists.
        (
            M::DELETE,
            "/api/admin/queue",
            None,
            [404, 404, 404, 405, 404, 404],
        ),
        (
            M::GET,
            "/api/admin/dead-letters/redrive",
            None,
            [404, 404, 404, 405, 404, 404],
        ),
        (
            M::GET,
            "/api/admin/jobs/{j}/approve",
            None,
            [404, 404, 404, 405, 404, 404],
        ),
    ]
}

/// What a row's path and body may name besides the scenario.
struct Extra {
    other_member: User,
    event_id: String,
    dead_letter: String,
}

fn fill(template: &str, s: &Scenario, x: &Extra) -> String {
    template
        .replace("{e}", &x.event_id)
        .replace("{d}", &x.dead_letter)
        .replace("{c}", &s.company_id.to_string())
        .replace("{j}", &s.job_id.to_string())
        .replace("{a}", &s.application_id.to_string())
        .replace("{m}", &s.employer.id.to_string())
        .replace(
            "{u}",
            &jobboard::unsubscribe::token(
                b"test-secret-test-secret-test-secret",
                jobboard::unsubscribe::Target::Digest {
                    user_id: s.employer.id,
                },
            ),
        )
        .replace("{other_member_email}", &x.other_member.email)
}

/// A dead letter on the database queue: a message no worker could read.
async fn dead_letter(app: &TestApp) -> String {
    let store = &app.state.store;
    store
        .queue_enqueue(None, None, "not an event")
        .await
        .unwrap();
    let m = store.queue_receive(1, 60_000).await.unwrap().remove(0);
    store
        .queue_dead_letter(
            m.id,
            &m.receipt,
            jobboard::store::NewDeadLetter {
                event_id: None,
                reason: "invalid message: not JSON".into(),
                attempts: 0,
                body: m.body,
                first_failed_at: None,
                invalid: true,
            },
        )
        .await
        .unwrap();
    store
        .dead_letters()
        .await
        .unwrap()
        .last()
        .unwrap()
        .id
        .to_string()
}

async fn every_endpoint_answers_each_caller_as_the_table_says(app: TestApp) {
    let mut wrong = Vec::new();
    for (method, path, body, expected) in table() {
        let s = app.scenario().await;
        let other_candidate = app.user("candidate").await;
        let other_member = app.user("employer").await;
        let operator = app.operator().await;
        app.company(&other_member, "Elsewhere").await;
        let mut event_id = String::new();
        if path.contains("{e}") {
            app.patch(
                &format!("/api/applications/{}", s.application_id),
                Some(&s.employer.token),
                serde_json::json!({"status": "reviewing"}),
            )
            .await
            .expect(200);
            event_id = app
                .scalar_text(&format!(
                    "SELECT event_id FROM application_history WHERE application_id = {} \
                     AND new_status = 'reviewing'",
                    s.application_id
                ))
                .await
                .expect("the change's event");
        }
        let dead_letter = if path.contains("{d}")
            || body.as_ref().is_some_and(|b| b.to_string().contains("{d}"))
        {
            dead_letter(&app).await
        } else {
            String::new()
        };
        let x = Extra {
            other_member,
            event_id,
            dead_letter,
        };
        let path = fill(path, &s, &x);
        let body = body.map(|b| {
            let text = fill(&b.to_string(), &s, &x);
            // `"{c}"` stands for the company id, a number.
            let text = text.replace(&format!("\"{}\"", s.company_id), &s.company_id.to_string());
            serde_json::from_str::<Value>(&text).unwrap()
        });
        let tokens = [
            None,
            Some(other_candidate.token.as_str()),
            Some(x.other_member.token.as_str()),
            Some(operator.token.as_str()),
            Some(s.candidate.token.as_str()),
            Some(s.employer.token.as_str()),
        ];
        for ((caller, token), want) in CALLERS.iter().zip(tokens).zip(expected) {
            let before = app.fingerprint().await;
            let r = app.send(method.clone(), &path, token, body.clone()).await;
            let got = r.status.as_u16();
            if got != want {
                wrong.push(format!(
                    "{method} {path} as {caller}: {got}, expected {want} ({})",
                    r.text
                ));
            }
            if got >= 400 {
                assert_eq!(
                    r.header("content-type"),
                    Some("application/problem+json"),
                    "{method} {path}"
                );
                let after = app.fingerprint().await;
                if after != before {
                    wrong.push(format!(
                        "{method} {path} as {caller}: refused with {got} but changed the database"
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
