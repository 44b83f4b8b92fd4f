//! Email: the message for an event (its text is [`templates`]'), and the mailers that send it
//! (console, file, SMTP, Amazon SES).
//! Every message carries `Message-ID: <{event_id}@{EMAIL_FROM domain}>` and
//! `X-Jobboard-Event-Id`, so a receiving system can recognise a repeat of the same event; a
//! digest carries `List-Unsubscribe` and `List-Unsubscribe-Post` (RFC 8058).

use crate::config::{Config, EmailBackend};
use crate::domain::event::Event;
use crate::domain::mail::{EmailData, SendError};
use crate::domain::validate;
use anyhow::Context;
use async_trait::async_trait;
use lettre::Message;
use lettre::message::Mailbox;
use lettre::message::header::{ContentType, Header, HeaderName, HeaderValue};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod ses;
mod smtp;
pub mod templates;
pub use ses::SesMailer;
pub use smtp::SmtpMailer;

/// Sends one built message.
#[async_trait]
pub trait Mailer: Send + Sync + 'static {
    fn kind(&self) -> &'static str;
    async fn send(&self, message: &Message) -> Result<(), SendError>;
    /// Whether the mail service would take a session now, checked without sending anything
    /// (while it refuses sessions, before a message is risked on it).
    async fn probe(&self) -> Result<Probe, SendError> {
        Ok(Probe::CannotTell)
    }
}

/// What a probe of the mail service found, when it did not refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// A session opened as a message's would (for SMTP: connected, encrypted, logged in, the
    /// sender taken): the service takes sessions again.
    Opened,
    /// This mailer cannot tell without sending: the next message tells.
    CannotTell,
}

/// The `X-Jobboard-Event-Id` header.
#[derive(Debug, Clone)]
pub struct EventIdHeader(pub String);

impl Header for EventIdHeader {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("X-Jobboard-Event-Id")
    }

    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(EventIdHeader(s.to_string()))
    }

    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), self.0.clone())
    }
}

/// Who sends, the domain of every Message-ID, and where the links in the emails' text point.
#[derive(Debug, Clone)]
pub struct Sender {
    pub from: String,
    pub domain: String,
    /// `PUBLIC_BASE_URL` (without a trailing `/`): an alert digest links each job under it.
    pub base_url: String,
}

impl Sender {
    /// `EMAIL_FROM` as an envelope address, if it is one.
    pub fn address(&self) -> Option<lettre::Address> {
        let mailbox: lettre::message::Mailbox = self.from.parse().ok()?;
        Some(mailbox.email)
    }

    /// `EMAIL_FROM` as it goes out: its domain in A-label form (see [`validate::sendable_address`]).
    pub fn from_config(config: &Config) -> Sender {
        let from = validate::sendable_address(&config.email_from)
            .unwrap_or_else(|_| config.email_from.clone());
        let domain = from
            .rsplit_once('@')
            .map(|(_, d)| d.to_string())
            .unwrap_or_else(|| "localhost".to_string());
        Sender {
            from,
            domain,
            base_url: config.public_base_url.clone(),
        }
    }
}

pub use crate::domain::mail::NOT_SENT;

/// The permanent failure of an email that could not be built.
pub fn not_sent(error: &anyhow::Error) -> SendError {
    SendError::Permanent(format!("{NOT_SENT}{error:#}"))
}

/// A header of our own whose value is given as it goes out.
macro_rules! header {
    ($(#[$doc:meta])* $name:ident, $text:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name(pub String);

        impl Header for $name {
            fn name() -> HeaderName {
                HeaderName::new_from_ascii_str($text)
            }

            fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
                Ok($name(s.to_string()))
            }

            fn display(&self) -> HeaderValue {
                HeaderValue::new(Self::name(), self.0.clone())
            }
        }
    };
}

header!(
    /// `List-Unsubscribe: <URL>` (RFC 2369).
    ListUnsubscribe,
    "List-Unsubscribe"
);
header!(
    /// `List-Unsubscribe-Post: List-Unsubscribe=One-Click` (RFC 8058).
    ListUnsubscribePost,
    "List-Unsubscribe-Post"
);

/// The email for `event` to its person, rendered at send time from `data` (see [`templates`]).
/// `list_unsubscribe` is the link that stops this kind of email: with it, the message carries
/// `List-Unsubscribe` and the one-click `List-Unsubscribe-Post` (docs/guarantee.md).
pub fn event_email(
    sender: &Sender,
    event: &Event,
    data: &EmailData,
    list_unsubscribe: Option<&str>,
) -> anyhow::Result<Message> {
    let text = templates::render(event, data, &sender.base_url, list_unsubscribe)?;
    let to = &data.to;
    // Addresses stored before the rule of docs/api.md may break it: such an email is never
    // handed to a mail service that may or may not take it.
    let address = validate::sendable_address(&to.email)
        .map_err(|reason| {
            anyhow::anyhow!(
                "user {}'s address is not one every mail service can send to: it {reason}",
                to.user_id
            )
        })?
        .parse()
        .with_context(|| format!("user {}'s address is not deliverable", to.user_id))?;
    let mut builder = Message::builder()
        .from(
            sender
                .from
                .parse()
                .context("EMAIL_FROM is not an address")?,
        )
        .to(mailbox(to.user_id, &to.name, address)?)
        .subject(text.subject)
        .message_id(Some(format!("<{}@{}>", event.event_id, sender.domain)))
        .header(EventIdHeader(event.event_id.clone()));
    if let Some(link) = list_unsubscribe {
        builder = builder
            .header(ListUnsubscribe(format!("<{link}>")))
            .header(ListUnsubscribePost(
                "List-Unsubscribe=One-Click".to_string(),
            ));
    }
    builder
        .header(ContentType::TEXT_PLAIN)
        .body(text.body)
        .context("building the email")
}

/// User `user_id`'s `To:`: their name folded onto one line (a name stored before docs/api.md
/// may hold line breaks), none if nothing is left. lettre panics writing a name it cannot encode:
/// written here first, that fails the email for good (a dead letter naming the user) instead.
fn mailbox(user_id: i64, name: &str, address: lettre::Address) -> anyhow::Result<Mailbox> {
    let name = validate::fold_one_line(name);
    let mailbox = Mailbox::new(Some(name).filter(|n| !n.is_empty()), address);
    let mut written = String::new();
    std::fmt::Write::write_fmt(&mut written, format_args!("{mailbox}"))
        .map_err(|_| anyhow::anyhow!("user {user_id}'s name cannot be put in the To: header"))?;
    Ok(mailbox)
}

/// Builds the mailer `EMAIL_BACKEND` names.
pub async fn from_config(config: &Config) -> anyhow::Result<Arc<dyn Mailer>> {
    let timeout = Duration::from_secs(config.email_send_timeout_secs);
    Ok(match config.email_backend {
        EmailBackend::Console => Arc::new(ConsoleMailer),
        EmailBackend::File => Arc::new(FileMailer::new(config.email_file_dir.clone())?),
        EmailBackend::Smtp => {
            let url = config
                .smtp_url
                .as_ref()
                .context("SMTP_URL is required with EMAIL_BACKEND=smtp")?;
            let mailer = SmtpMailer::from_url(
                secrecy::ExposeSecret::expose_secret(url),
                timeout,
                config.worker_concurrency,
            )?;
            Arc::new(mailer.probing_sender(Sender::from_config(config).address()))
        }
        EmailBackend::Ses => {
            Arc::new(SesMailer::connect(config.ses_endpoint_url.as_deref(), timeout).await)
        }
    })
}

/// Prints each message to standard output: for development.
pub struct ConsoleMailer;

#[async_trait]
impl Mailer for ConsoleMailer {
    fn kind(&self) -> &'static str {
        "console"
    }

    async fn send(&self, message: &Message) -> Result<(), SendError> {
        let text = String::from_utf8_lossy(&message.formatted()).into_owned();
        println!("----- email -----\n{}\n----- end -----", text.trim_end());
        Ok(())
    }
}

/// Writes one `.eml` file per sent message, atomically (a temporary file, then a rename).
pub struct FileMailer {
    dir: PathBuf,
}

impl FileMailer {
    pub fn new(dir: PathBuf) -> anyhow::Result<FileMailer> {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create EMAIL_FILE_DIR {}", dir.display()))?;
        Ok(FileMailer { dir })
    }
}

#[async_trait]
impl Mailer for FileMailer {
    fn kind(&self) -> &'static str {
        "file"
    }

    async fn send(&self, message: &Message) -> Result<(), SendError> {
        let event = message
            .headers()
            .get_raw("X-Jobboard-Event-Id")
            .unwrap_or("message")
            .to_string();
        let unique = uuid::Uuid::new_v4().simple().to_string();
        let tmp = self.dir.join(format!(".{event}-{unique}.tmp"));
        let path = self.dir.join(format!("{event}-{unique}.eml"));
        let bytes = message.formatted();
        let io = |e: std::io::Error| SendError::Transient(format!("writing the email file: {e}"));
        tokio::fs::write(&tmp, &bytes).await.map_err(io)?;
        let file = tokio::fs::File::open(&tmp).await.map_err(io)?;
        file.sync_all().await.map_err(io)?;
        tokio::fs::rename(&tmp, &path).await.map_err(io)?;
        Ok(())
    }
}

/// Replaces anything that looks like an email address, for logs and dead-letter reasons.
pub fn mask_addresses(text: &str) -> String {
    text.split_inclusive(|c: char| c.is_whitespace() || c == '<' || c == '>' || c == ',')
        .map(|part| {
            let word = part
                .trim_end_matches(|c: char| c.is_whitespace() || c == '<' || c == '>' || c == ',');
            if word.contains('@') && word.len() > 2 {
                part.replacen(word, "***@***", 1)
            } else {
                part.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> EmailData {
        EmailData {
            to: crate::domain::mail::Recipient {
                user_id: 7,
                email: "cody@mail.example".into(),
                name: "Cody".into(),
            },
            about: crate::domain::mail::About::Application {
                job_title: "Rust Engineer".into(),
                company: "Acme".into(),
                resume: None,
            },
        }
    }

    fn sender() -> Sender {
        Sender {
            from: "jobs@acme.example".into(),
            domain: "acme.example".into(),
            base_url: "https://jobs.acme.example".into(),
        }
    }

    fn status_change() -> Event {
        let mut e = Event::new(
            crate::domain::event::EventKind::StatusChanged {
                application_id: 3,
                old_status: crate::domain::ApplicationStatus::Reviewing,
                new_status: crate::domain::ApplicationStatus::Interview,
            },
            chrono::Utc::now(),
        );
        e.event_id = "evt-1".into();
        e
    }

    #[test]
    fn message_carries_event_headers() {
        let m = message();
        let text = String::from_utf8(m.formatted()).unwrap();
        assert!(text.contains("Message-ID: <evt-1@acme.example>"), "{text}");
        assert!(text.contains("X-Jobboard-Event-Id: evt-1"), "{text}");
        assert!(text.contains("To: Cody <cody@mail.example>"), "{text}");
        assert!(
            text.contains("Subject: Update on your application for Rust Engineer at Acme"),
            "{text}"
        );
        let body = text.replace("=\r\n", "");
        assert!(body.contains("from reviewing to interview"), "{text}");
        assert!(!text.contains("List-Unsubscribe"), "{text}");
    }

    #[test]
    fn a_link_to_unsubscribe_adds_the_one_click_headers() {
        let link = "https://jobs.example/api/unsubscribe/abc.def";
        let m = event_email(&sender(), &status_change(), &data(), Some(link)).unwrap();
        let text = String::from_utf8(m.formatted()).unwrap();
        assert!(
            text.contains(&format!("List-Unsubscribe: <{link}>\r\n")),
            "{text}"
        );
        assert!(
            text.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"),
            "{text}"
        );
    }

    #[test]
    fn an_undeliverable_address_names_the_user_not_the_address() {
        let mut bad = data();
        bad.to.email = "cödy@mail.example".into();
        let error = event_email(&sender(), &status_change(), &bad, None).unwrap_err();
        let text = format!("{error:#}");
        assert!(text.contains("user 7's address"), "{text}");
        assert!(!text.contains("mail.example"), "{text}");
    }

    /// A name stored with line breaks goes out folded in `To:` (lettre panics on it as it is).
    #[test]
    fn a_name_with_line_breaks_is_folded_in_the_to_header() {
        let mut named = data();
        named.to.name = "Pat\r\nBcc: victim@evil.example\u{2028}\u{202e}".into();
        let message = event_email(&sender(), &status_change(), &named, None).unwrap();
        let text = String::from_utf8(message.formatted()).unwrap();
        // "Pat Bcc: victim@evil.example", one line, as an encoded word; no header of its own.
        let to = "To: =?utf-8?b?UGF0IEJjYzogdmljdGltQGV2aWwuZXhhbXBsZQ==?= <cody@mail.example>\r\n";
        assert!(text.contains(to) && !text.contains("\r\nBcc:"), "{text}");
    }

    /// A status-change message to Cody, as the worker builds it.
    pub(super) fn message() -> Message {
        event_email(&sender(), &status_change(), &data(), None).unwrap()
    }

    #[test]
    fn addresses_are_masked() {
        assert_eq!(
            mask_addresses("550 mailbox <cody@mail.example> unknown"),
            "550 mailbox <***@***> unknown"
        );
        assert_eq!(mask_addresses("no address here"), "no address here");
    }
}
