//! Properties, checked on many generated inputs (proptest): the status workflow, queue-message
//! parsing, search tokenizing and configuration parsing never panic and keep their rules,
//! whatever they are given.

use jobboard::domain::event::{Decision, Event, EventKind, parse_event};
use jobboard::domain::search::{MAX_TERM_CHARS, document_terms, query_terms, words};
use jobboard::domain::{Actor, ApplicationStatus};
use proptest::prelude::*;
use std::collections::BTreeSet;

fn status() -> impl Strategy<Value = ApplicationStatus> {
    prop::sample::select(ApplicationStatus::ALL.to_vec())
}

fn actor() -> impl Strategy<Value = Actor> {
    prop_oneof![Just(Actor::Employer), Just(Actor::Candidate)]
}

fn time() -> impl Strategy<Value = chrono::DateTime<chrono::Utc>> {
    (0i64..4_000_000_000).prop_map(|secs| chrono::DateTime::from_timestamp(secs, 0).unwrap())
}

/// An event of any type of docs/guarantee.md.
fn event_kind() -> impl Strategy<Value = EventKind> {
    // Resource ids are positive and below 2^53 (docs/api.md); derived event ids fit 64
    // characters for those.
    let id = 1i64..(1 << 53);
    let ids = prop::collection::vec(id.clone(), 0..5);
    let decision = prop_oneof![Just(Decision::Approved), Just(Decision::Rejected)];
    let period = prop_oneof![
        (2000i32..2100, 1u32..=52).prop_map(|(y, w)| format!("{y}-W{w:02}")),
        (2000i32..2100, 1u32..=12, 1u32..=28).prop_map(|(y, m, d)| format!("{y}-{m:02}-{d:02}")),
    ];
    prop_oneof![
        (id.clone(), status(), status()).prop_map(|(application_id, old_status, new_status)| {
            EventKind::StatusChanged {
                application_id,
                old_status,
                new_status,
            }
        }),
        id.clone()
            .prop_map(|application_id| EventKind::Submitted { application_id }),
        (id.clone(), id.clone(), time()).prop_map(|(job_id, user_id, expires_at)| {
            EventKind::JobExpiring {
                job_id,
                user_id,
                expires_at,
            }
        }),
        (id.clone(), id.clone(), time()).prop_map(|(job_id, user_id, expires_at)| {
            EventKind::JobExpired {
                job_id,
                user_id,
                expires_at,
            }
        }),
        (id.clone(), id.clone(), decision).prop_map(|(job_id, user_id, decision)| {
            EventKind::JobReviewed {
                job_id,
                user_id,
                decision,
            }
        }),
        (id.clone(), time(), ids.clone(), any::<u64>()).prop_map(
            |(user_id, hour, applications, further)| EventKind::ApplicationsDigest {
                user_id,
                hour,
                applications,
                further,
            },
        ),
        (id, period, ids, any::<u64>()).prop_map(|(alert_id, period, jobs, more)| {
            EventKind::AlertDigest {
                alert_id,
                period,
                jobs,
                more,
            }
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any sequence of requested moves: each is allowed exactly when the table says so, a final
    /// status refuses everything (itself included), and only real moves emit an event.
    #[test]
    fn the_workflow_follows_its_table(moves in prop::collection::vec((status(), actor()), 0..40)) {
        let mut at = ApplicationStatus::Submitted;
        for (to, who) in moves {
            let allowed = at.allowed_moves(who);
            match at.check_move(to, who) {
                Ok(true) => {
                    prop_assert!(allowed.contains(&to), "{at} -> {to} by {who:?} passed");
                    prop_assert!(!at.is_final());
                    prop_assert!(
                        (to == ApplicationStatus::Withdrawn) == (who == Actor::Candidate),
                        "{} -> {} by {:?}: only candidates withdraw, and they do nothing else", at, to, who
                    );
                    at = to;
                }
                Ok(false) => {
                    prop_assert_eq!(at, to);
                    prop_assert!(!at.is_final(), "setting final {} again passed", at);
                }
                Err(e) => {
                    prop_assert!(!allowed.contains(&to) || at.is_final());
                    prop_assert!(!e.to_string().is_empty());
                    prop_assert_eq!(e.allowed, allowed);
                }
            }
        }
    }

    /// Any text is an invalid message with a reason, or a valid event that reads back the same.
    #[test]
    fn any_message_body_parses_or_names_its_fault(body in any::<String>()) {
        match parse_event(&body) {
            Ok(event) => prop_assert_eq!(parse_event(&event.to_json()).ok(), Some(event)),
            Err(invalid) => prop_assert!(!invalid.reason.is_empty()),
        }
    }

    /// Every event, of every type, reads back as itself.
    #[test]
    fn events_round_trip(kind in event_kind(), at in time()) {
        let event = Event::new(kind, at);
        prop_assert_eq!(parse_event(&event.to_json()).ok(), Some(event));
    }

    /// A valid event of any type with one field removed or replaced by another JSON type is
    /// refused, never read with a default, and the reason names the field; a usable event id is
    /// kept for the dead letter. The optional fields, an alert digest's `more` and an applications
    /// digest's `further` (additions to §5's table; a digest written before `further` has none),
    /// read as 0 when absent.
    #[test]
    fn a_damaged_event_is_refused(kind in event_kind(), field in any::<prop::sample::Index>(), replace in prop_oneof![
        Just(None), Just(Some(serde_json::json!(null))), Just(Some(serde_json::json!(true))),
        Just(Some(serde_json::json!([]))), Just(Some(serde_json::json!({})))]) {
        let event = Event::new(kind, chrono::Utc::now());
        let mut value: serde_json::Value = serde_json::from_str(&event.to_json()).unwrap();
        let obj = value.as_object_mut().unwrap();
        let keys: Vec<String> = obj.keys().cloned().collect();
        let key = field.get(&keys).clone();
        // An empty list is a list: replacing one with `[]` changes nothing.
        let was_list = obj[&key].is_array();
        match replace {
            None if key == "more" => {
                obj.remove(&key);
                let read = parse_event(&value.to_string()).expect("more is optional");
                let jobboard::domain::event::EventKind::AlertDigest { more, .. } = read.kind else {
                    panic!("only an alert digest has more");
                };
                prop_assert_eq!(more, 0);
                return Ok(());
            }
            None if key == "further" => {
                obj.remove(&key);
                let read = parse_event(&value.to_string()).expect("further is optional");
                let jobboard::domain::event::EventKind::ApplicationsDigest { further, .. } = read.kind else {
                    panic!("only an applications digest has further");
                };
                prop_assert_eq!(further, 0);
                return Ok(());
            }
            None => { obj.remove(&key); }
            Some(v) if v.is_array() && was_list => { obj.insert(key.clone(), serde_json::json!({})); }
            Some(v) => { obj.insert(key.clone(), v); }
        }
        let invalid = parse_event(&value.to_string()).expect_err("a damaged event was accepted");
        if key != "event_id" {
            prop_assert_eq!(invalid.event_id.as_deref(), Some(event.event_id.as_str()));
        }
        prop_assert!(invalid.reason.contains(&key), "{} does not name {}", invalid.reason, key);
    }

    /// Tokenizing never panics, terms are lower-case words without separators, a query's terms
    /// are sorted and distinct, and a document matches a query made of its own words.
    #[test]
    fn search_terms_keep_their_rules(text in any::<String>(), other in "[A-Za-z ]{0,40}") {
        for w in words(&text) {
            prop_assert!(!w.is_empty());
            prop_assert!(!w.chars().any(char::is_whitespace), "{:?}", w);
        }
        let doc: BTreeSet<String> = document_terms(&[&text, &other]).split(' ')
            .filter(|t| !t.is_empty()).map(str::to_string).collect();
        if let Some(q) = query_terms(&text) {
            let mut sorted = q.clone();
            sorted.sort();
            sorted.dedup();
            prop_assert_eq!(&sorted, &q);
            for t in &q {
                prop_assert!(t.chars().count() <= MAX_TERM_CHARS);
                prop_assert!(doc.contains(t), "the document lacks its own term {:?}", t);
            }
        }
        // ASCII case never matters.
        prop_assert_eq!(query_terms(&other.to_uppercase()), query_terms(&other.to_lowercase()));
    }

    /// Any values for any variables: a configuration, or one error that names a variable given
    /// (or one that a rule between variables concerns); never a panic.
    #[test]
    fn any_environment_is_read_or_refused_by_name(vars in prop::collection::hash_map(
        prop::sample::select(jobboard::config::variable_names()), any::<String>(), 0..6)) {
        let known = jobboard::config::variable_names();
        if let Err(e) = jobboard::config::Config::from_map(&vars, false) {
            prop_assert!(known.contains(&e.var), "unknown variable {:?} in {}", e.var, e.message);
            prop_assert!(!e.message.is_empty());
        }
    }
}
