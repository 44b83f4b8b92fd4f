//! The model's mail outcomes (`Mail`), as Amazon SES gives them: each SES answer or failure the
//! classifier knows, made for real by an HTTP server in place of SES and met by the real
//! `SesMailer` (the SDK's client, its error parsing, the classifier), must come out as the
//! `SendError` that the model assumes for its `Mail` outcome. A change to the classifier or to
//! the model's outcomes shows here.

use jobboard::domain::ApplicationStatus;
use jobboard::domain::event::{Event, EventKind};
use jobboard::domain::mail::{About, EmailData, Recipient, SendError};
use jobboard::email::{Mailer, Sender, SesMailer, event_email};
use jobboard_protocol_model::{Mail, Seen};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The send's deadline in the table: long enough for a loopback answer, short for a hold.
const DEADLINE: Duration = Duration::from_secs(2);
const FROM: &str = "jobs@acme.example";

/// The `SendError` the worker must see for each of the model's mail outcomes: the model's own
/// statement of it (`Mail::seen`, which `Protocol::send` acts on), so this table and the SMTP one
/// in `src/email/smtp.rs` answer to the same definition.
fn modelled(mail: Mail) -> Seen {
    mail.seen()
}

fn kind(result: &Result<(), SendError>) -> Seen {
    match result {
        Ok(()) => Seen::Sent,
        Err(SendError::Transient(_)) => Seen::Transient,
        Err(SendError::Permanent(_)) => Seen::Permanent,
        Err(SendError::Unavailable(_)) => Seen::Unavailable,
        Err(SendError::Unknown(_)) => Seen::Unknown,
    }
}

/// What the server in place of SES does with a `SendEmail` request.
#[derive(Clone, Copy)]
enum Ses {
    /// Answers with this status and SES error code (`X-Amzn-ErrorType`), and this message.
    Error(u16, &'static str, &'static str),
    /// Answers 200 with a message id.
    Accept,
    /// Reads the request whole, then answers nothing and holds the connection.
    Hold,
    /// Reads the request whole, then closes the connection.
    Drop,
    /// Nothing listens: the connection is refused before a byte of the request is written.
    Closed,
    /// Accepts, but the worker has no credentials to sign the request with: it never leaves.
    Unsigned,
}

/// The table: each case, what SES does, and the model's outcome for it.
fn table() -> Vec<(&'static str, Ses, Mail)> {
    vec![
        ("accepted", Ses::Accept, Mail::Accept),
        (
            "throttling",
            Ses::Error(
                429,
                "TooManyRequestsException",
                "Maximum sending rate exceeded.",
            ),
            Mail::SessionRefused,
        ),
        (
            "daily quota",
            Ses::Error(
                400,
                "LimitExceededException",
                "Daily message quota exceeded.",
            ),
            Mail::SessionRefused,
        ),
        (
            "sending paused",
            Ses::Error(
                400,
                "SendingPausedException",
                "Sending is paused for this account.",
            ),
            Mail::SessionRefused,
        ),
        (
            "account suspended",
            Ses::Error(400, "AccountSuspendedException", "Account suspended."),
            Mail::SessionRefused,
        ),
        (
            "credentials",
            Ses::Error(
                403,
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
            ),
            Mail::SessionRefused,
        ),
        (
            "expired credentials",
            Ses::Error(
                403,
                "ExpiredTokenException",
                "The security token included in the request is expired",
            ),
            Mail::SessionRefused,
        ),
        (
            "unverified sender identity",
            Ses::Error(
                400,
                "MessageRejected",
                "Email address is not verified. The following identities failed the check in \
                 region US-EAST-1: jobs@acme.example",
            ),
            Mail::SessionRefused,
        ),
        (
            "unverified MAIL FROM domain",
            Ses::Error(
                400,
                "MailFromDomainNotVerifiedException",
                "The MAIL FROM domain is not verified.",
            ),
            Mail::SessionRefused,
        ),
        (
            "MessageRejected for the recipient",
            Ses::Error(
                400,
                "MessageRejected",
                "Email address is not verified. The following identities failed the check in \
                 region US-EAST-1: cody@mail.example",
            ),
            Mail::Refuse5xx,
        ),
        (
            "a bad address",
            Ses::Error(400, "BadRequestException", "Missing final '@domain'"),
            Mail::Refuse5xx,
        ),
        (
            "a 5xx: InternalFailure",
            Ses::Error(500, "InternalFailure", "Internal failure."),
            Mail::Refuse4xx,
        ),
        (
            "a 5xx: ServiceUnavailable",
            Ses::Error(503, "ServiceUnavailable", "Service unavailable."),
            Mail::SessionRefused,
        ),
        (
            "a timeout after the request was written",
            Ses::Hold,
            Mail::AcceptLate,
        ),
        (
            "a dropped connection after the request was written",
            Ses::Drop,
            Mail::AcceptLate,
        ),
        (
            "a connection refused before the request",
            Ses::Closed,
            Mail::SessionRefused,
        ),
        (
            "no credentials to sign with",
            Ses::Unsigned,
            Mail::SessionRefused,
        ),
    ]
}

/// An endpoint that does what `ses` says, for every request.
async fn endpoint(ses: Ses) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    if let Ses::Closed = ses {
        drop(listener);
        return format!("http://{address}");
    }
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(answer(socket, ses));
        }
    });
    format!("http://{address}")
}

async fn answer(mut socket: TcpStream, ses: Ses) {
    if !read_request(&mut socket).await {
        return;
    }
    let (status, headers, body) = match ses {
        Ses::Accept => (
            "200 OK".to_string(),
            String::new(),
            r#"{"MessageId":"table-1"}"#.to_string(),
        ),
        Ses::Error(status, code, message) => (
            format!("{status} Error"),
            format!("X-Amzn-ErrorType: {code}\r\n"),
            serde_json::json!({ "message": message }).to_string(),
        ),
        Ses::Hold => {
            tokio::time::sleep(DEADLINE * 3).await;
            return;
        }
        Ses::Drop | Ses::Closed => return,
        Ses::Unsigned => unreachable!("an unsigned request is never sent"),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    // The client may have given up already; the table reads what it saw.
    if socket.write_all(reply.as_bytes()).await.is_ok() {
        socket.shutdown().await.ok();
    }
}

/// Reads one request whole (its head and its `Content-Length` body).
async fn read_request(socket: &mut TcpStream) -> bool {
    let mut seen = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if seen.len() >= end + 4 + length {
                return true;
            }
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => seen.extend_from_slice(&chunk[..n]),
        }
    }
}

fn message() -> lettre::Message {
    let sender = Sender {
        from: FROM.into(),
        domain: "acme.example".into(),
        base_url: "https://jobs.acme.example".into(),
    };
    let data = EmailData {
        to: Recipient {
            user_id: 7,
            email: "cody@mail.example".into(),
            name: "Cody".into(),
        },
        about: About::Application {
            job_title: "Rust Engineer".into(),
            company: "Acme".into(),
            resume: None,
        },
    };
    let mut event = Event::new(
        EventKind::StatusChanged {
            application_id: 3,
            old_status: ApplicationStatus::Reviewing,
            new_status: ApplicationStatus::Interview,
        },
        chrono::Utc::now(),
    );
    event.event_id = "evt-table".into();
    event_email(&sender, &event, &data, None).expect("the message")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_ses_outcome_is_the_one_the_model_assumes() {
    let config = || {
        aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
    };
    let signed = config()
        .credentials_provider(aws_sdk_sesv2::config::Credentials::new(
            "test", "test", None, None, "table",
        ))
        .load()
        .await;
    let unsigned = config().no_credentials().load().await;
    let message = message();
    let mut wrong = Vec::new();
    for (case, ses, mail) in table() {
        let (url, shared) = match ses {
            Ses::Unsigned => (endpoint(Ses::Accept).await, &unsigned),
            _ => (endpoint(ses).await, &signed),
        };
        let mailer = SesMailer::with_config(shared, Some(&url), DEADLINE);
        // The worker's own deadline, as it wraps every send.
        let result = tokio::time::timeout(DEADLINE + Duration::from_secs(1), mailer.send(&message))
            .await
            .unwrap_or_else(|_| Err(SendError::Unknown("the worker's deadline".into())));
        if kind(&result) != modelled(mail) {
            wrong.push(format!(
                "{case}: the model assumes {mail:?} ({:?}), the mailer gives {result:?}",
                modelled(mail)
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
