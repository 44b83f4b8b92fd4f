//! Screening questions (CONTRACT.md §4, "Jobs" and "Applications"): a job holds up to
//! [`MAX_QUESTIONS`], each `yes_no`, `short_text` or `number` and required or not; applying
//! answers them. A question's `id` is the server's, kept while the question is unchanged, so
//! that answers already given still name it after a member edits the others.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

pub const MAX_QUESTIONS: usize = 20;
pub const TEXT_MAX: usize = 500;
pub const SHORT_ANSWER_MAX: usize = 1_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum QuestionKind {
    YesNo,
    ShortText,
    Number,
}

/// A job's question, as stored and shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Question {
    pub id: i64,
    pub text: String,
    pub kind: QuestionKind,
    pub required: bool,
}

/// One answer, as stored and shown: a JSON boolean, string or number as the question's kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Answer {
    pub question_id: i64,
    #[schema(schema_with = answer_schema)]
    pub answer: Value,
}

/// An answer's schema: a boolean, a string or a number, as its question's kind says.
fn answer_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Boolean))
        .item(ObjectBuilder::new().schema_type(Type::String))
        .item(ObjectBuilder::new().schema_type(Type::Number))
        .description(Some(
            "a boolean (`yes_no`), a string (`short_text`) or a number (`number`)",
        ))
        .build()
        .into()
}

/// The stored questions of a job (`None`: none).
pub fn stored(text: Option<&str>) -> Vec<Question> {
    text.and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default()
}

/// What is stored for `questions` (`None` for none).
pub fn to_stored(questions: &[Question]) -> Option<String> {
    (!questions.is_empty()).then(|| serde_json::to_string(questions).unwrap_or_default())
}

/// A member's `questions`: an array of `{text, kind, required?}` (ids are the server's), which
/// replaces `previous`. An unchanged question keeps its id; a new one takes the next free id.
/// `Err((field, message))` names what does not fit.
pub fn parse(value: &Value, previous: &[Question]) -> Result<Vec<Question>, (String, String)> {
    let Some(items) = value.as_array() else {
        return Err(("questions".into(), "must be an array".into()));
    };
    if items.len() > MAX_QUESTIONS {
        return Err((
            "questions".into(),
            format!("at most {MAX_QUESTIONS} questions"),
        ));
    }
    let mut next = previous.iter().map(|q| q.id).max().unwrap_or(0) + 1;
    let mut taken = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let field = |name: &str| format!("questions[{i}].{name}");
        let Some(obj) = item.as_object() else {
            return Err((format!("questions[{i}]"), "must be an object".into()));
        };
        if let Some(unknown) = obj
            .keys()
            .find(|k| !matches!(k.as_str(), "text" | "kind" | "required" | "id"))
        {
            return Err((field(unknown), "is not a field of a question".into()));
        }
        let text = match obj.get("text").and_then(Value::as_str) {
            Some(t) => super::validate::one_line(t, 1, TEXT_MAX).map_err(|m| (field("text"), m))?,
            None => return Err((field("text"), "is required: a string".into())),
        };
        let kind = match obj.get("kind").and_then(Value::as_str) {
            Some("yes_no") => QuestionKind::YesNo,
            Some("short_text") => QuestionKind::ShortText,
            Some("number") => QuestionKind::Number,
            _ => {
                return Err((
                    field("kind"),
                    "must be one of yes_no, short_text, number".into(),
                ));
            }
        };
        let required = match obj.get("required") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err((field("required"), "must be true or false".into())),
        };
        let id = previous
            .iter()
            .find(|q| {
                q.text == text && q.kind == kind && q.required == required && !taken.contains(&q.id)
            })
            .map(|q| q.id)
            .unwrap_or_else(|| {
                next += 1;
                next - 1
            });
        taken.insert(id);
        out.push(Question {
            id,
            text,
            kind,
            required,
        });
    }
    Ok(out)
}

/// The answers to `questions` an application gives (`None`: none given), checked: every
/// required question answered, each answer of its question's kind, no question twice and none
/// that is not the job's. `Err((field, message))` names `answers.<question id>` or `answers`.
pub fn check_answers(
    questions: &[Question],
    given: Option<&Value>,
) -> Result<Vec<Answer>, (String, String)> {
    let items: &[Value] = match given {
        None | Some(Value::Null) => &[],
        Some(Value::Array(items)) => items,
        Some(_) => return Err(("answers".into(), "must be an array".into())),
    };
    let mut answers: Vec<Answer> = Vec::new();
    for item in items {
        let (Some(id), Some(answer)) = (
            item.get("question_id").and_then(Value::as_i64),
            item.get("answer"),
        ) else {
            return Err((
                "answers".into(),
                "each answer is {question_id, answer}".into(),
            ));
        };
        let field = format!("answers.{id}");
        let Some(q) = questions.iter().find(|q| q.id == id) else {
            return Err((field, "is not a question of this job".into()));
        };
        if answers.iter().any(|a| a.question_id == id) {
            return Err((field, "is answered twice".into()));
        }
        let fits: Result<(), &str> = match (q.kind, answer) {
            (QuestionKind::YesNo, Value::Bool(_)) => Ok(()),
            (QuestionKind::YesNo, _) => Err("must be true or false"),
            (QuestionKind::Number, Value::Number(_)) => Ok(()),
            (QuestionKind::Number, _) => Err("must be a number"),
            (QuestionKind::ShortText, Value::String(s)) => {
                match super::validate::multi_line(s, 1, SHORT_ANSWER_MAX) {
                    Ok(_) => Ok(()),
                    Err(m) => return Err((field, m)),
                }
            }
            (QuestionKind::ShortText, _) => Err("must be a string"),
        };
        fits.map_err(|m| (field, m.to_string()))?;
        answers.push(Answer {
            question_id: id,
            answer: answer.clone(),
        });
    }
    if let Some(q) = questions
        .iter()
        .find(|q| q.required && !answers.iter().any(|a| a.question_id == q.id))
    {
        return Err((format!("answers.{}", q.id), "is required".into()));
    }
    answers.sort_by_key(|a| questions.iter().position(|q| q.id == a.question_id));
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unchanged_questions_keep_their_ids() {
        let first = parse(
            &json!([{"text": "Can you work in the EU?", "kind": "yes_no", "required": true},
                    {"text": "Years of Rust?", "kind": "number"}]),
            &[],
        )
        .unwrap();
        assert_eq!(first.iter().map(|q| q.id).collect::<Vec<_>>(), [1, 2]);
        let second = parse(
            &json!([{"text": "Years of Rust?", "kind": "number"},
                    {"text": "Notice period?", "kind": "short_text"}]),
            &first,
        )
        .unwrap();
        assert_eq!(second.iter().map(|q| q.id).collect::<Vec<_>>(), [2, 3]);
    }

    #[test]
    fn bad_questions_name_their_field() {
        let too_many: Vec<Value> = (0..21)
            .map(|i| json!({"text": format!("q{i}"), "kind": "number"}))
            .collect();
        assert_eq!(parse(&json!(too_many), &[]).unwrap_err().0, "questions");
        assert_eq!(
            parse(&json!([{"text": "x", "kind": "essay"}]), &[])
                .unwrap_err()
                .0,
            "questions[0].kind"
        );
        assert_eq!(
            parse(&json!([{"text": "", "kind": "number"}]), &[])
                .unwrap_err()
                .0,
            "questions[0].text"
        );
    }

    #[test]
    fn answers_must_fit_their_questions() {
        let qs = parse(
            &json!([{"text": "EU?", "kind": "yes_no", "required": true},
                    {"text": "Years?", "kind": "number"},
                    {"text": "Why us?", "kind": "short_text"}]),
            &[],
        )
        .unwrap();
        let ok = check_answers(
            &qs,
            Some(&json!([{"question_id": 2, "answer": 4.5}, {"question_id": 1, "answer": true}])),
        )
        .unwrap();
        assert_eq!(ok.iter().map(|a| a.question_id).collect::<Vec<_>>(), [1, 2]);
        let err = |v: Value| check_answers(&qs, Some(&v)).unwrap_err().0;
        assert_eq!(err(json!([])), "answers.1");
        assert_eq!(
            err(json!([{"question_id": 1, "answer": "yes"}])),
            "answers.1"
        );
        assert_eq!(
            err(json!([{"question_id": 1, "answer": true}, {"question_id": 2, "answer": "4"}])),
            "answers.2"
        );
        assert_eq!(
            err(
                json!([{"question_id": 1, "answer": true}, {"question_id": 3, "answer": "x".repeat(1001)}])
            ),
            "answers.3"
        );
        assert_eq!(
            err(json!([{"question_id": 9, "answer": true}])),
            "answers.9"
        );
        assert_eq!(check_answers(&[], None).unwrap(), vec![]);
    }
}
