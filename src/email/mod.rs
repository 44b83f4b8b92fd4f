//! Email: the message for a status change, and the mailers that send it (console, file, SMTP,
//! Amazon SES).
//! Every message carries `Message-ID: <{event_id}@{EMAIL_FROM domain}>` and
//! `X-Jobboard-Event-Id`, so a receiving system can recognise a repeat of the same event.

use crate::config::{Config, EmailBackend};
use crate::domain::mail::{EmailData, SendError};
use crate::domain::{ApplicationStatus, validate};
use anyhow::Context;
use async_trait::async_trait;
use lettre::Message;
use lettre::message::header::{ContentType, Header, HeaderName, HeaderValue};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod ses;
mod smtp;
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

/// Who sends, and the domain of every Message-ID.
#[derive(Debug, Clone)]
pub struct Sender {
    pub from: String,
    pub domain: String,
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
        Sender { from, domain }
    }
}

/// How a permanent failure's text starts when the email could not be built, so that no mail
/// service saw it (an address stored before the rule of CONTRACT.md §4).
pub const NOT_SENT: &str = "not sent: ";

/// The permanent failure of an email that could not be built.
pub fn not_sent(error: &anyhow::Error) -> SendError {
    SendError::Permanent(format!("{NOT_SENT}{error:#}"))
}

/// The email telling the candidate about a status change, rendered from current data.
pub fn status_email(
    sender: &Sender,
    data: &EmailData,
    event_id: &str,
    old: ApplicationStatus,
    new: ApplicationStatus,
) -> anyhow::Result<Message> {
    let subject = format!(
        "Update on your application for {} at {}",
        data.job_title, data.company
    );
    let body = if new == ApplicationStatus::Withdrawn {
        format!(
            "Hello {},\n\nThis confirms that you withdrew your application for {} at {} \
             (it was {old}; it is now {new}).\n\n-- jobboard\n",
            data.name, data.job_title, data.company
        )
    } else {
        format!(
            "Hello {},\n\nYour application for {} at {} has moved from {old} to {new}.\n\n-- jobboard\n",
            data.name, data.job_title, data.company
        )
    };
    // Addresses stored before the rule of CONTRACT.md §4 may break it: such an email is never
    // handed to a mail service that may or may not take it.
    let address = validate::sendable_address(&data.email)
        .map_err(|reason| {
            anyhow::anyhow!(
                "user {}'s address is not one every mail service can send to: it {reason}",
                data.candidate_id
            )
        })?
        .parse()
        .with_context(|| format!("user {}'s address is not deliverable", data.candidate_id))?;
    let to = lettre::message::Mailbox::new(Some(data.name.clone()), address);
    Message::builder()
        .from(
            sender
                .from
                .parse()
                .context("EMAIL_FROM is not an address")?,
        )
        .to(to)
        .subject(subject)
        .message_id(Some(format!("<{event_id}@{}>", sender.domain)))
        .header(EventIdHeader(event_id.to_string()))
        .header(ContentType::TEXT_PLAIN)
        .body(body)
        .context("building the email")
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
            candidate_id: 7,
            email: "cody@mail.example".into(),
            name: "Cody".into(),
            job_title: "Rust Engineer".into(),
            company: "Acme".into(),
        }
    }

    #[test]
    fn message_carries_event_headers() {
        let m = message();
        let text = String::from_utf8(m.formatted()).unwrap();
        assert!(text.contains("Message-ID: <evt-1@acme.example>"), "{text}");
        assert!(text.contains("X-Jobboard-Event-Id: evt-1"), "{text}");
        assert!(
            text.contains("Subject: Update on your application for Rust Engineer at Acme"),
            "{text}"
        );
        let body = text.replace("=\r\n", "");
        assert!(body.contains("from reviewing to interview"), "{text}");
    }

    /// A status-change message to Cody, as the worker builds it.
    pub(super) fn message() -> Message {
        let sender = Sender {
            from: "jobs@acme.example".into(),
            domain: "acme.example".into(),
        };
        let (from, to) = (ApplicationStatus::Reviewing, ApplicationStatus::Interview);
        status_email(&sender, &data(), "evt-1", from, to).unwrap()
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
