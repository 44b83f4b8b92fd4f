//! Email: the message for a status change, and the mailers that send it (console, file, SMTP).
//! Every message carries `Message-ID: <{event_id}@{EMAIL_FROM domain}>` and
//! `X-Jobboard-Event-Id`, so a receiving system can recognise a repeat of the same event.

use crate::config::{Config, EmailBackend};
use crate::domain::ApplicationStatus;
use crate::domain::mail::{EmailData, SendError};
use anyhow::Context;
use async_trait::async_trait;
use lettre::message::header::{ContentType, Header, HeaderName, HeaderValue};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::authentication::DEFAULT_MECHANISMS;
use lettre::transport::smtp::client::{AsyncSmtpConnection, Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Sends one built message.
#[async_trait]
pub trait Mailer: Send + Sync + 'static {
    fn kind(&self) -> &'static str;
    async fn send(&self, message: &Message) -> Result<(), SendError>;
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
    pub fn from_config(config: &Config) -> Sender {
        let domain = config
            .email_from
            .rsplit_once('@')
            .map(|(_, d)| d.to_string())
            .unwrap_or_else(|| "localhost".to_string());
        Sender {
            from: config.email_from.clone(),
            domain,
        }
    }
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
    let to = lettre::message::Mailbox::new(
        Some(data.name.clone()),
        data.email
            .parse()
            .with_context(|| format!("user {}'s address is not deliverable", data.candidate_id))?,
    );
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
pub fn from_config(config: &Config) -> anyhow::Result<Arc<dyn Mailer>> {
    let timeout = Duration::from_secs(config.email_send_timeout_secs);
    Ok(match config.email_backend {
        EmailBackend::Console => Arc::new(ConsoleMailer),
        EmailBackend::File => Arc::new(FileMailer::new(config.email_file_dir.clone())?),
        EmailBackend::Smtp => {
            let url = config
                .smtp_url
                .as_ref()
                .context("SMTP_URL is required with EMAIL_BACKEND=smtp")?;
            Arc::new(SmtpMailer::from_url(
                secrecy::ExposeSecret::expose_secret(url),
                timeout,
            )?)
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

/// Sends through an SMTP server (STARTTLS or implicit TLS), with a deadline per send.
pub struct SmtpMailer {
    /// `smtps://`: lettre's transport, TLS from the first byte.
    implicit_tls: Option<AsyncSmtpTransport<Tokio1Executor>>,
    host: String,
    port: u16,
    tls: Tls,
    credentials: Option<Credentials>,
    timeout: Duration,
    hello: ClientId,
}

impl SmtpMailer {
    /// `smtp://[user:pass@]host:port[?tls=opportunistic|required|none]` or `smtps://…`.
    pub fn from_url(raw: &str, timeout: Duration) -> anyhow::Result<SmtpMailer> {
        let url = url::Url::parse(raw).context("SMTP_URL is not a valid URL")?;
        let host = url.host_str().context("SMTP_URL needs a host")?.to_string();
        let implicit = url.scheme() == "smtps";
        let mode = url
            .query_pairs()
            .find(|(k, _)| k == "tls")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_else(|| "opportunistic".to_string());
        let params = || TlsParameters::new(host.clone()).context("TLS parameters for SMTP_URL");
        let tls = if implicit {
            Tls::Wrapper(params()?)
        } else {
            match mode.as_str() {
                "required" => Tls::Required(params()?),
                "none" => Tls::None,
                _ => Tls::Opportunistic(params()?),
            }
        };
        let port = url.port().unwrap_or(if implicit { 465 } else { 587 });
        let credentials = (!url.username().is_empty()).then(|| {
            Credentials::new(
                percent_decode(url.username()),
                percent_decode(url.password().unwrap_or("")),
            )
        });
        let implicit_tls = implicit.then(|| {
            let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&host)
                .port(port)
                .tls(tls.clone())
                .timeout(Some(timeout));
            if let Some(c) = &credentials {
                builder = builder.credentials(c.clone());
            }
            builder.build()
        });
        Ok(SmtpMailer {
            implicit_tls,
            host,
            port,
            tls,
            credentials,
            timeout,
            hello: ClientId::default(),
        })
    }

    /// One message over a connection of our own with `TCP_NODELAY`. lettre writes a message's
    /// body and its final `.` separately; with Nagle's algorithm that `.` waits for the body's
    /// acknowledgement, which the server delays (40 ms on Linux) because it has nothing to answer
    /// yet: every email took 40 ms longer than it had to.
    async fn send_plain(&self, message: &Message) -> Result<(), SendError> {
        let stream = match tokio::time::timeout(
            self.timeout,
            tokio::net::TcpStream::connect((self.host.as_str(), self.port)),
        )
        .await
        {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(SendError::Transient(format!("connection error: {e}"))),
            Err(_) => return Err(SendError::Transient("connection timed out".into())),
        };
        let _ = stream.set_nodelay(true);
        let mut conn = AsyncSmtpConnection::connect_with_transport(Box::new(stream), &self.hello)
            .await
            .map_err(classify)?;
        match &self.tls {
            Tls::Opportunistic(params) if conn.can_starttls() => conn
                .starttls(params.clone(), &self.hello)
                .await
                .map_err(classify)?,
            Tls::Required(params) => conn
                .starttls(params.clone(), &self.hello)
                .await
                .map_err(classify)?,
            _ => {}
        }
        if let Some(c) = &self.credentials {
            conn.auth(DEFAULT_MECHANISMS, c).await.map_err(classify)?;
        }
        conn.send(message.envelope(), &message.formatted())
            .await
            .map_err(classify)?;
        // The message is accepted; a failed goodbye changes nothing.
        let _ = conn.quit().await;
        Ok(())
    }
}

/// 5xx: the server refuses for good. 4xx, connection trouble, timeouts: try again.
fn classify(e: lettre::transport::smtp::Error) -> SendError {
    if e.is_permanent() {
        SendError::Permanent(mask_addresses(&e.to_string()))
    } else {
        SendError::Transient(mask_addresses(&e.to_string()))
    }
}

fn percent_decode(s: &str) -> String {
    // Userinfo is percent-encoded; unlike a form body, `+` is a plus sign.
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

#[async_trait]
impl Mailer for SmtpMailer {
    fn kind(&self) -> &'static str {
        "smtp"
    }

    async fn send(&self, message: &Message) -> Result<(), SendError> {
        match &self.implicit_tls {
            Some(transport) => transport
                .send(message.clone())
                .await
                .map(|_| ())
                .map_err(classify),
            None => self.send_plain(message).await,
        }
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
        let sender = Sender {
            from: "jobs@acme.example".into(),
            domain: "acme.example".into(),
        };
        let m = status_email(
            &sender,
            &data(),
            "evt-1",
            ApplicationStatus::Reviewing,
            ApplicationStatus::Interview,
        )
        .unwrap();
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

    #[test]
    fn credentials_are_percent_decoded() {
        assert_eq!(percent_decode("me+jobs%40x.com"), "me+jobs@x.com");
        assert_eq!(percent_decode("p%2Fa+ss"), "p/a+ss");
    }

    /// A one-connection SMTP server that advertises `ehlo` and answers every command with
    /// `250` (`354` for DATA, `235` for AUTH); returns its port and the commands it received.
    async fn scripted_server(ehlo: &'static str) -> (u16, tokio::task::JoinHandle<Vec<String>>) {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            let (conn, _) = listener.accept().await.unwrap();
            let (r, mut w) = conn.into_split();
            let mut r = BufReader::new(r);
            let mut seen = Vec::new();
            w.write_all(b"220 test\r\n").await.unwrap();
            let mut line = String::new();
            let mut in_data = false;
            while r.read_line(&mut line).await.unwrap_or(0) > 0 {
                let reply: &[u8] = if in_data {
                    if line == ".\r\n" {
                        in_data = false;
                        b"250 queued\r\n"
                    } else {
                        b""
                    }
                } else {
                    seen.push(line.trim_end().to_string());
                    match line.get(..4).unwrap_or("") {
                        "EHLO" => ehlo.as_bytes(),
                        "AUTH" => b"235 ok\r\n",
                        "DATA" => {
                            in_data = true;
                            b"354 go on\r\n"
                        }
                        "QUIT" => {
                            let _ = w.write_all(b"221 bye\r\n").await;
                            break;
                        }
                        _ => b"250 ok\r\n",
                    }
                };
                w.write_all(reply).await.unwrap();
                line.clear();
            }
            seen
        });
        (port, task)
    }

    fn message() -> Message {
        let sender = Sender {
            from: "jobs@acme.example".into(),
            domain: "acme.example".into(),
        };
        let (from, to) = (ApplicationStatus::Reviewing, ApplicationStatus::Interview);
        status_email(&sender, &data(), "evt-1", from, to).unwrap()
    }

    #[tokio::test]
    async fn smtp_logs_in_with_decoded_credentials_and_sends() {
        let (port, server) = scripted_server("250-test\r\n250 AUTH PLAIN LOGIN\r\n").await;
        let url = format!("smtp://us%2Ber:p+ss@127.0.0.1:{port}?tls=opportunistic");
        let mailer = SmtpMailer::from_url(&url, Duration::from_secs(5)).unwrap();
        mailer.send(&message()).await.expect("sent");
        let seen = server.await.unwrap();
        let auth = seen
            .iter()
            .find(|l| l.starts_with("AUTH PLAIN"))
            .expect("AUTH");
        let token = auth.trim_start_matches("AUTH PLAIN ").trim();
        let plain = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, token)
            .expect("base64");
        assert_eq!(plain, b"\0us+er\0p+ss");
        assert!(
            seen.iter()
                .any(|l| l.starts_with("MAIL FROM:<jobs@acme.example>")),
            "{seen:?}"
        );
        assert!(seen.iter().any(|l| l == "DATA"), "{seen:?}");
    }

    #[tokio::test]
    async fn smtp_requiring_tls_refuses_a_server_without_starttls() {
        let (port, server) = scripted_server("250 test\r\n").await;
        let url = format!("smtp://127.0.0.1:{port}?tls=required");
        let mailer = SmtpMailer::from_url(&url, Duration::from_secs(5)).unwrap();
        let err = mailer.send(&message()).await.expect_err("no STARTTLS");
        assert!(matches!(err, SendError::Transient(_)), "{err:?}");
        drop(server);
    }

    #[tokio::test]
    async fn smtp_unreachable_is_temporary() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("smtp://127.0.0.1:{port}?tls=none");
        let mailer = SmtpMailer::from_url(&url, Duration::from_secs(5)).unwrap();
        let err = mailer.send(&message()).await.expect_err("nobody listens");
        assert!(matches!(err, SendError::Transient(_)), "{err:?}");
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
