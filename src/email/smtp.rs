//! The SMTP mailer: a small pool of open sessions (connected, encrypted, logged in), reused from
//! one message to the next, so a message costs one transaction rather than a TCP handshake,
//! a TLS handshake, EHLO and AUTH.
//!
//! The sessions are ours rather than lettre's pooled transport because that transport opens its
//! sockets itself, without `TCP_NODELAY`. lettre writes a message's body and its final `.`
//! separately; with Nagle's algorithm that `.` waits for the body's acknowledgement, which the
//! server delays (40 ms on Linux) because it has nothing to answer yet: every email would take
//! 40 ms longer than it has to. Implicit TLS (`smtps://`) is the exception: lettre has to open
//! that socket to wrap it before the greeting, so those sessions keep Nagle's algorithm.

use super::{Mailer, Probe, mask_addresses};
use crate::domain::mail::SendError;
use anyhow::Context;
use async_trait::async_trait;
use lettre::Message;
use lettre::transport::smtp::authentication::{Credentials, DEFAULT_MECHANISMS};
use lettre::transport::smtp::client::{AsyncSmtpConnection, Tls, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt, Rset};
use lettre::transport::smtp::extension::{ClientId, Extension, MailBodyParameter, MailParameter};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Messages one session carries before it is closed and a fresh one opened, so that no session
/// lives forever (servers limit them too, and a fresh one picks up a changed DNS record).
const MAX_MESSAGES_PER_SESSION: u32 = 100;
/// An idle session older than this is closed rather than reused: servers drop idle clients
/// after a while (RFC 5321 asks them to wait 5 minutes, not all do).
const MAX_IDLE: Duration = Duration::from_secs(60);
/// How long the `RSET` that checks an idle session before its reuse may take; a session that
/// does not answer in time is dropped and a fresh one opened, within the send's deadline.
const RESET_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a retired session gets to say goodbye.
const QUIT_TIMEOUT: Duration = Duration::from_secs(1);

/// Sends through an SMTP server (STARTTLS or implicit TLS), with a deadline per send.
pub struct SmtpMailer {
    host: String,
    port: u16,
    tls: Tls,
    credentials: Option<Credentials>,
    timeout: Duration,
    hello: ClientId,
    /// Sessions waiting for their next message, the most recently used last.
    idle: Mutex<Vec<Session>>,
    /// At most this many idle sessions are kept: as many as messages are sent at once.
    max_idle: usize,
    /// The sender a probe offers in `MAIL FROM` (then resets), so that a service refusing the
    /// sender is found before a message is risked on it.
    probe_from: Option<lettre::Address>,
}

/// One open session and what it has done.
struct Session {
    conn: AsyncSmtpConnection,
    sent: u32,
    idle_since: Instant,
}

impl SmtpMailer {
    /// `smtp://[user:pass@]host:port[?tls=opportunistic|required|none]` or `smtps://…`;
    /// `connections` is how many messages are sent at once (the idle sessions kept).
    pub fn from_url(raw: &str, timeout: Duration, connections: usize) -> anyhow::Result<Self> {
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
        Ok(SmtpMailer {
            host,
            port,
            tls,
            credentials,
            timeout,
            hello: ClientId::default(),
            idle: Mutex::new(Vec::new()),
            max_idle: connections.max(1),
            probe_from: None,
        })
    }

    /// Probes offer `from` in `MAIL FROM` too, as messages do.
    pub fn probing_sender(self, from: Option<lettre::Address>) -> Self {
        SmtpMailer {
            probe_from: from,
            ..self
        }
    }

    /// An idle session that still answers, or a new one.
    async fn checkout(&self) -> Result<Session, SendError> {
        while let Some(mut session) = self.take_idle() {
            // Also clears anything a previous transaction could have left behind.
            if let Ok(Ok(_)) = tokio::time::timeout(RESET_TIMEOUT, session.conn.command(Rset)).await
            {
                return Ok(session);
            }
        }
        Ok(Session {
            conn: self.open().await?,
            sent: 0,
            idle_since: Instant::now(),
        })
    }

    /// The most recently used idle session that is young enough; older ones are closed.
    fn take_idle(&self) -> Option<Session> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(session) = idle.pop() {
            if !session.conn.has_broken() && session.idle_since.elapsed() < MAX_IDLE {
                return Some(session);
            }
            retire(session);
        }
        None
    }

    /// Back to the pool after a message it carried was accepted; closed when it has carried
    /// its share or the pool is full.
    fn checkin(&self, mut session: Session) {
        if session.sent >= MAX_MESSAGES_PER_SESSION || session.conn.has_broken() {
            return retire(session);
        }
        session.idle_since = Instant::now();
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < self.max_idle {
            idle.push(session);
        } else {
            drop(idle);
            retire(session);
        }
    }

    /// A new session: connected (with `TCP_NODELAY` unless the TLS wraps the socket from the
    /// first byte), greeted, encrypted as `SMTP_URL` asks, logged in, all within half the send's
    /// deadline: a server that accepts the connection and then says nothing (a tarpit, an
    /// overloaded relay) refuses the session, and says so before the whole send runs out of time.
    /// Every failure here is the session's, not a message's: [`SendError::Unavailable`].
    async fn open(&self) -> Result<AsyncSmtpConnection, SendError> {
        let within = self.timeout / 2;
        match tokio::time::timeout(within, self.open_session()).await {
            Ok(opened) => opened.map_err(|e| match e {
                SendError::Transient(m) | SendError::Permanent(m) | SendError::Unknown(m) => {
                    SendError::Unavailable(m)
                }
                unavailable => unavailable,
            }),
            Err(_) => Err(SendError::Unavailable(format!(
                "no SMTP session within {}s (connection, greeting, TLS, EHLO or login)",
                within.as_secs_f64()
            ))),
        }
    }

    async fn open_session(&self) -> Result<AsyncSmtpConnection, SendError> {
        let mut conn = match &self.tls {
            Tls::Wrapper(params) => AsyncSmtpConnection::connect_tokio1(
                (self.host.as_str(), self.port),
                None,
                &self.hello,
                Some(params.clone()),
                None,
            )
            .await
            .map_err(refused)?,
            _ => {
                let stream = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
                    .await
                    .map_err(|e| SendError::Unavailable(format!("connection error: {e}")))?;
                if let Err(e) = stream.set_nodelay(true) {
                    // Only slower: each message's final `.` may wait for a delayed ACK.
                    tracing::debug!(error = %e, "TCP_NODELAY not set on the SMTP connection");
                }
                AsyncSmtpConnection::connect_with_transport(Box::new(stream), &self.hello)
                    .await
                    .map_err(refused)?
            }
        };
        match &self.tls {
            Tls::Opportunistic(params) if conn.can_starttls() => conn
                .starttls(params.clone(), &self.hello)
                .await
                .map_err(refused)?,
            Tls::Required(params) => conn
                .starttls(params.clone(), &self.hello)
                .await
                .map_err(refused)?,
            _ => {}
        }
        if let Some(c) = &self.credentials {
            conn.auth(DEFAULT_MECHANISMS, c).await.map_err(refused)?;
        }
        Ok(conn)
    }
}

/// Closes a session that is not going back to the pool, politely and without waiting for it.
fn retire(mut session: Session) {
    if session.conn.has_broken() {
        return;
    }
    tokio::spawn(async move {
        if let Ok(Err(e)) = tokio::time::timeout(QUIT_TIMEOUT, session.conn.quit()).await {
            // The session is done with either way; the server closes it on its side too.
            tracing::debug!(error = %e, "a retired SMTP session's QUIT failed");
        }
    });
}

/// Where a message's exchange stands: what a failure there says depends on it (docs/guarantee.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Step {
    /// Opening the session: connection, greeting, STARTTLS and TLS, EHLO, AUTH; or the `RSET`
    /// that checks an idle one.
    Session = 0,
    MailFrom = 1,
    RcptTo = 2,
    /// The `DATA` command, before any of the message is written.
    Data = 3,
    /// The message's content and its final `.`: from its first byte on, the server may have it.
    Content = 4,
}

impl Step {
    fn from_u8(n: u8) -> Step {
        match n {
            1 => Step::MailFrom,
            2 => Step::RcptTo,
            3 => Step::Data,
            4 => Step::Content,
            _ => Step::Session,
        }
    }
}

/// Replies that refuse the session's login whatever the command they answer: 530
/// (authentication or STARTTLS required first), 534 and 538 (a stronger login mechanism or
/// encryption required), 535 (credentials refused).
const LOGIN_REFUSALS: [u16; 4] = [530, 534, 535, 538];

/// Any failure while the session opens: the session's, not a message's.
fn refused(e: lettre::transport::smtp::Error) -> SendError {
    SendError::Unavailable(mask_addresses(&e.to_string()))
}

/// A failure of a message's exchange at `step` (docs/guarantee.md):
/// - a login refusal ([`LOGIN_REFUSALS`]) at any command, and 421 or 454 to `MAIL FROM` (the
///   sender refused, the service closing), refuse the session: an outage of the mail service;
/// - before the content is written, a 4xx (421 and 454 included) or a connection that drops
///   fails this message for now, and a 5xx refuses it for good;
/// - once the content is being written, a 4xx or 5xx to it still fails or refuses it, but a
///   connection that drops, or a reply that cannot be read, leaves its outcome unknown (lettre
///   reports no client error there: the content's checks ran before `MAIL FROM`).
pub(crate) fn classify(step: Step, e: &lettre::transport::smtp::Error) -> SendError {
    let text = mask_addresses(&e.to_string());
    let code = e.status().map(u16::from);
    match (step, code) {
        (Step::Session, _) => SendError::Unavailable(text),
        (_, Some(c)) if LOGIN_REFUSALS.contains(&c) => SendError::Unavailable(text),
        (Step::MailFrom, Some(421 | 454)) => SendError::Unavailable(text),
        (Step::Content, None) => SendError::Unknown(text),
        _ if e.is_permanent() => SendError::Permanent(text),
        _ => SendError::Transient(text),
    }
}

/// A send whose deadline passed at `step`: before the content was written the server cannot
/// have the message (a failure for now, or, while the session opens, a refused session); after,
/// the outcome is unknown.
pub(crate) fn timed_out(step: Step, deadline: Duration) -> SendError {
    let text = format!(
        "SMTP send timed out after {}s at {step:?}",
        deadline.as_secs_f64()
    );
    match step {
        Step::Session => SendError::Unavailable(text),
        Step::MailFrom | Step::RcptTo | Step::Data => SendError::Transient(text),
        Step::Content => SendError::Unknown(text),
    }
}

/// One message's transaction on an open session, command by command (as lettre's
/// `AsyncSmtpConnection::send` runs it, which does not say at which command it failed), noting
/// in `at` the step under way.
async fn transact(
    conn: &mut AsyncSmtpConnection,
    message: &Message,
    at: &AtomicU8,
) -> Result<(), SendError> {
    let envelope = message.envelope();
    let body = message.formatted();
    let step = |s: Step| at.store(s as u8, Ordering::SeqCst);
    let fail = |s: Step| move |e: lettre::transport::smtp::Error| classify(s, &e);
    let mut options = Vec::new();
    let ascii = |a: &lettre::Address| AsRef::<str>::as_ref(a).is_ascii();
    if !(envelope.from().is_none_or(ascii) && envelope.to().iter().all(ascii)) {
        if !conn.server_info().supports_feature(Extension::SmtpUtfEight) {
            return Err(SendError::Transient(
                "an address is not ASCII and the server does not support SMTPUTF8".into(),
            ));
        }
        options.push(MailParameter::SmtpUtfEight);
    }
    if !body.is_ascii() {
        if !conn.server_info().supports_feature(Extension::EightBitMime) {
            return Err(SendError::Transient(
                "the message is not ASCII and the server does not support 8BITMIME".into(),
            ));
        }
        options.push(MailParameter::Body(MailBodyParameter::EightBitMime));
    }
    step(Step::MailFrom);
    let from = Mail::new(envelope.from().cloned(), options);
    conn.command(from).await.map_err(fail(Step::MailFrom))?;
    step(Step::RcptTo);
    for to in envelope.to() {
        let rcpt = Rcpt::new(to.clone(), vec![]);
        conn.command(rcpt).await.map_err(fail(Step::RcptTo))?;
    }
    step(Step::Data);
    conn.command(Data).await.map_err(fail(Step::Data))?;
    step(Step::Content);
    conn.message(&body).await.map_err(fail(Step::Content))?;
    Ok(())
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

    /// Opens a session (connected, encrypted, logged in), offers the sender and resets, and
    /// keeps the session for the next message.
    async fn probe(&self) -> Result<Probe, SendError> {
        let opened = async {
            let mut conn = self.open().await?;
            if let Some(from) = &self.probe_from {
                let offer = Mail::new(Some(from.clone()), vec![]);
                conn.command(offer)
                    .await
                    .map_err(|e| classify(Step::MailFrom, &e))?;
                conn.command(Rset)
                    .await
                    .map_err(|e| classify(Step::Session, &e))?;
            }
            Ok(conn)
        };
        let conn = tokio::time::timeout(self.timeout, opened)
            .await
            .map_err(|_| timed_out(Step::Session, self.timeout))??;
        self.checkin(Session {
            conn,
            sent: 0,
            idle_since: Instant::now(),
        });
        Ok(Probe::Opened)
    }

    /// A session goes back to the pool only after the server accepted the message: one whose
    /// send failed or ran out of time is dropped with the future that held it.
    async fn send(&self, message: &Message) -> Result<(), SendError> {
        let at = AtomicU8::new(Step::Session as u8);
        let attempt = async {
            let mut session = self.checkout().await?;
            transact(&mut session.conn, message, &at).await?;
            session.sent += 1;
            Ok(session)
        };
        match tokio::time::timeout(self.timeout, attempt).await {
            Ok(Ok(session)) => {
                self.checkin(session);
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(timed_out(
                Step::from_u8(at.load(Ordering::SeqCst)),
                self.timeout,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::email::tests::message;
    use jobboard_protocol_model::{Mail, Seen as Modelled};
    use std::sync::Arc;

    #[test]
    fn credentials_are_percent_decoded() {
        assert_eq!(percent_decode("me+jobs%40x.com"), "me+jobs@x.com");
        assert_eq!(percent_decode("p%2Fa+ss"), "p/a+ss");
    }

    /// What the scripted server does with the first message it receives (the later ones are
    /// accepted).
    #[derive(Clone, Copy)]
    enum First {
        Accept,
        /// `451`: try again later.
        Refuse,
        /// No answer at all.
        Stall,
    }

    /// The commands each connection received, one list per connection, in order of arrival.
    type Seen = Arc<Mutex<Vec<Vec<String>>>>;

    /// An SMTP server that advertises `ehlo` and answers every command with `250` (`354` for
    /// DATA, `235` for AUTH), on as many connections as it is given; returns its port and the
    /// commands it received. A command is noted before it is answered.
    async fn scripted_server(ehlo: &'static str, first: First) -> (u16, Seen) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Seen::default();
        let (all, messages) = (seen.clone(), Arc::new(Mutex::new(0_usize)));
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let index = {
                    let mut all = all.lock().unwrap();
                    all.push(Vec::new());
                    all.len() - 1
                };
                let (all, messages) = (all.clone(), messages.clone());
                tokio::spawn(async move {
                    let _ = session(
                        conn,
                        ehlo,
                        first,
                        |line| all.lock().unwrap()[index].push(line),
                        move || {
                            let mut n = messages.lock().unwrap();
                            *n += 1;
                            *n
                        },
                    )
                    .await;
                });
            }
        });
        (port, seen)
    }

    async fn session(
        conn: tokio::net::TcpStream,
        ehlo: &'static str,
        first: First,
        note: impl Fn(String),
        count: impl Fn() -> usize,
    ) -> std::io::Result<()> {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let (r, mut w) = conn.into_split();
        let mut r = BufReader::new(r);
        w.write_all(b"220 test\r\n").await?;
        let mut line = String::new();
        let mut in_data = false;
        while r.read_line(&mut line).await? > 0 {
            let reply: &[u8] = if in_data {
                if line == ".\r\n" {
                    in_data = false;
                    match (count(), first) {
                        (1, First::Refuse) => b"451 4.3.0 try again later\r\n",
                        (1, First::Stall) => {
                            std::future::pending::<()>().await;
                            b""
                        }
                        _ => b"250 queued\r\n",
                    }
                } else {
                    b""
                }
            } else {
                note(line.trim_end().to_string());
                match line.get(..4).unwrap_or("") {
                    "EHLO" => ehlo.as_bytes(),
                    "AUTH" => b"235 ok\r\n",
                    "DATA" => {
                        in_data = true;
                        b"354 go on\r\n"
                    }
                    "QUIT" => {
                        w.write_all(b"221 bye\r\n").await?;
                        return Ok(());
                    }
                    _ => b"250 ok\r\n",
                }
            };
            w.write_all(reply).await?;
            line.clear();
        }
        Ok(())
    }

    fn mailer(url: &str, timeout: Duration) -> SmtpMailer {
        SmtpMailer::from_url(url, timeout, 4).unwrap()
    }

    #[tokio::test]
    async fn smtp_logs_in_with_decoded_credentials_and_sends() {
        let ehlo = "250-test\r\n250 AUTH PLAIN LOGIN\r\n";
        let (port, seen) = scripted_server(ehlo, First::Accept).await;
        let url = format!("smtp://us%2Ber:p+ss@127.0.0.1:{port}?tls=opportunistic");
        mailer(&url, Duration::from_secs(5))
            .send(&message())
            .await
            .expect("sent");
        let seen = seen.lock().unwrap()[0].clone();
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
    async fn smtp_probe_opens_the_session_the_next_message_uses() {
        let ehlo = "250-test\r\n250 AUTH PLAIN LOGIN\r\n";
        let (port, seen) = scripted_server(ehlo, First::Accept).await;
        let url = format!("smtp://user:pass@127.0.0.1:{port}?tls=opportunistic");
        let mailer = mailer(&url, Duration::from_secs(5));
        mailer.probe().await.expect("the session opens");
        mailer.send(&message()).await.expect("sent");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1, "one connection: {seen:?}");
        let auth = seen[0].iter().filter(|l| l.starts_with("AUTH")).count();
        assert_eq!(auth, 1, "{seen:?}");
    }

    #[tokio::test]
    async fn smtp_reuses_one_session_for_consecutive_messages() {
        let ehlo = "250-test\r\n250 AUTH PLAIN LOGIN\r\n";
        let (port, seen) = scripted_server(ehlo, First::Accept).await;
        let url = format!("smtp://user:pass@127.0.0.1:{port}?tls=opportunistic");
        let mailer = mailer(&url, Duration::from_secs(5));
        mailer.send(&message()).await.expect("first sent");
        mailer.send(&message()).await.expect("second sent");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1, "one connection: {seen:?}");
        let count = |verb: &str| seen[0].iter().filter(|l| l.starts_with(verb)).count();
        assert_eq!(count("EHLO"), 1, "{seen:?}");
        assert_eq!(count("AUTH"), 1, "{seen:?}");
        assert_eq!(count("DATA"), 2, "{seen:?}");
        assert_eq!(count("RSET"), 1, "checked before its reuse: {seen:?}");
    }

    /// The first message fails as `first` says; the second must be sent, on a new connection.
    /// Returns the commands of each connection.
    async fn failure_then_success(first: First, timeout: Duration) -> Vec<Vec<String>> {
        // A refusal fails the message for now; no answer leaves it unknown whether it went.
        let stalls = matches!(first, First::Stall);
        let (port, seen) = scripted_server("250 test\r\n", first).await;
        let mailer = mailer(&format!("smtp://127.0.0.1:{port}?tls=none"), timeout);
        let err = mailer.send(&message()).await.expect_err("first fails");
        match stalls {
            true => assert!(matches!(err, SendError::Unknown(_)), "{err:?}"),
            false => assert!(matches!(err, SendError::Transient(_)), "{err:?}"),
        }
        mailer.send(&message()).await.expect("second sent");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "a fresh connection for the second: {seen:?}");
        seen
    }

    #[tokio::test]
    async fn smtp_never_reuses_a_session_whose_send_failed() {
        failure_then_success(First::Refuse, Duration::from_secs(5)).await;
    }

    #[tokio::test]
    async fn smtp_never_reuses_a_session_whose_send_timed_out() {
        let seen = failure_then_success(First::Stall, Duration::from_millis(300)).await;
        let data = seen[0].iter().filter(|l| *l == "DATA").count();
        assert_eq!(data, 1, "{seen:?}");
    }

    /// A message sent through `url` must meet a refused session (an outage of the mail
    /// service, retried without counting an attempt), not a failure of its own; and so must
    /// a probe.
    async fn session_refused(url: &str, why: &str) {
        let mailer = mailer(url, Duration::from_secs(5));
        let sent = mailer.send(&message()).await;
        assert!(
            matches!(sent, Err(SendError::Unavailable(_))),
            "{why}: {sent:?}"
        );
        let probed = mailer.probe().await;
        assert!(
            matches!(probed, Err(SendError::Unavailable(_))),
            "{why}: {probed:?}"
        );
    }

    /// With a sender to offer, a probe checks that the service takes it (`MAIL FROM`, then
    /// `RSET`), so a service that refuses the sender is not taken for recovered.
    #[tokio::test]
    async fn smtp_probe_offers_the_sender_and_resets() {
        let (port, seen) = scripted_server("250 test\r\n", First::Accept).await;
        let from: lettre::Address = "jobs@acme.example".parse().unwrap();
        let url = format!("smtp://127.0.0.1:{port}?tls=none");
        let probing = mailer(&url, Duration::from_secs(5)).probing_sender(Some(from.clone()));
        assert_eq!(probing.probe().await, Ok(Probe::Opened));
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen[0][1..],
            ["MAIL FROM:<jobs@acme.example>", "RSET"],
            "{seen:?}"
        );

        let (port, _) = table_server(At::MailFrom, Reply::Code(454)).await;
        let url = format!("smtp://127.0.0.1:{port}?tls=none");
        let probing = mailer(&url, Duration::from_secs(5)).probing_sender(Some(from));
        let probed = probing.probe().await;
        assert!(
            matches!(probed, Err(SendError::Unavailable(_))),
            "{probed:?}"
        );

        // A session that takes the sender and then drops at RSET is no session either.
        let (port, _) = table_server(At::EndOfData, Reply::Code(250)).await;
        let url = format!("smtp://127.0.0.1:{port}?tls=none");
        let from: lettre::Address = "jobs@acme.example".parse().unwrap();
        let probing = mailer(&url, Duration::from_secs(5)).probing_sender(Some(from));
        let probed = probing.probe().await;
        assert!(
            matches!(probed, Err(SendError::Unavailable(_))),
            "{probed:?}"
        );
    }

    /// A server that accepts the connection and never greets refuses the session by half the
    /// send's deadline, the session's own, not the send's.
    #[tokio::test]
    async fn smtp_a_silent_server_refuses_the_session_at_half_the_deadline() {
        let (port, _) = table_server(At::Greeting, Reply::Stall).await;
        let url = format!("smtp://127.0.0.1:{port}?tls=none");
        let sent = mailer(&url, Duration::from_secs(2)).send(&message()).await;
        let Err(SendError::Unavailable(why)) = sent else {
            panic!("a refused session: {sent:?}");
        };
        assert!(why.contains("no SMTP session within 1s"), "{why}");
    }

    /// A session carries its share of messages, then a fresh one is opened.
    #[tokio::test]
    async fn smtp_retires_a_session_after_its_share_of_messages() {
        let (port, seen) = scripted_server("250 test\r\n", First::Accept).await;
        let mailer = mailer(
            &format!("smtp://127.0.0.1:{port}?tls=none"),
            Duration::from_secs(5),
        );
        for _ in 0..=MAX_MESSAGES_PER_SESSION {
            mailer.send(&message()).await.expect("sent");
        }
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "{} connections", seen.len());
        let data = seen[0].iter().filter(|l| *l == "DATA").count();
        assert_eq!(data, MAX_MESSAGES_PER_SESSION as usize);
    }

    /// The command at which the table's server answers as a row says.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum At {
        Greeting,
        Ehlo,
        StartTls,
        Auth,
        MailFrom,
        RcptTo,
        Data,
        /// The reply to the message's content (its final `.`).
        EndOfData,
    }

    /// How the table's server answers there.
    #[derive(Clone, Copy, Debug)]
    enum Reply {
        Code(u16),
        /// Nothing, until the client hangs up.
        Stall,
        /// The connection closed without a reply.
        Drop,
    }

    /// An SMTP server that answers every command positively except the one at `at`, which it
    /// answers with `reply`; it advertises STARTTLS only when that is the command refused, and
    /// always AUTH PLAIN. Returns its port and whether it has the message (its whole content
    /// arrived, whatever the reply).
    async fn table_server(at: At, reply: Reply) -> (u16, Arc<std::sync::atomic::AtomicBool>) {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let taken = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let has = taken.clone();
        tokio::spawn(async move {
            let Ok((conn, _)) = listener.accept().await else {
                return;
            };
            let (r, mut w) = conn.into_split();
            let mut r = BufReader::new(r);
            // Some(bytes): the reply; None: the session ends here as `reply` says.
            let answer = |here: At, ok: &str| -> Option<String> {
                if here != at {
                    return Some(ok.to_string());
                }
                match reply {
                    Reply::Code(code) => Some(format!("{code} {}\r\n", code / 100)),
                    Reply::Stall | Reply::Drop => None,
                }
            };
            let mut line = String::new();
            let mut step = At::Greeting;
            loop {
                let ok = match step {
                    At::Greeting => "220 table\r\n",
                    At::Ehlo if at == At::StartTls => {
                        "250-table\r\n250-STARTTLS\r\n250 AUTH PLAIN\r\n"
                    }
                    At::Ehlo => "250-table\r\n250 AUTH PLAIN\r\n",
                    At::StartTls => "220 go ahead\r\n",
                    At::Auth => "235 ok\r\n",
                    At::Data => "354 go on\r\n",
                    _ => "250 ok\r\n",
                };
                let Some(bytes) = answer(step, ok) else {
                    if let Reply::Stall = reply {
                        while r.read_line(&mut line).await.unwrap_or(0) > 0 {}
                    }
                    return;
                };
                if w.write_all(bytes.as_bytes()).await.is_err() || !bytes.starts_with(['2', '3']) {
                    // A refusal ends the table's row: the client closes or moves on, unanswered.
                    while r.read_line(&mut line).await.unwrap_or(0) > 0 {}
                    return;
                }
                line.clear();
                if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                    return;
                }
                let verb = line.get(..4).unwrap_or("").to_ascii_uppercase();
                step = match verb.as_str() {
                    "EHLO" => At::Ehlo,
                    "STAR" => At::StartTls,
                    "AUTH" => At::Auth,
                    "MAIL" => At::MailFrom,
                    "RCPT" => At::RcptTo,
                    "DATA" => {
                        if at == At::Data {
                            At::Data
                        } else {
                            // The content up to its final `.`, then the reply to it.
                            w.write_all(b"354 go on\r\n").await.ok();
                            loop {
                                line.clear();
                                if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                                    return;
                                }
                                if line == ".\r\n" {
                                    break;
                                }
                            }
                            // Refused at its end, it is not kept; otherwise it is, whether
                            // or not the reply reaches the client.
                            let refused =
                                at == At::EndOfData && matches!(reply, Reply::Code(c) if c >= 400);
                            has.store(!refused, Ordering::SeqCst);
                            At::EndOfData
                        }
                    }
                    _ => return,
                };
            }
        });
        (port, taken)
    }

    /// What the model (tests/model) stands for with this result: the one outcome whose view from
    /// the code, whose fate of the message, and whose reply class match. `None` when no modelled
    /// outcome matches: the model's checks would not cover what the code does here.
    fn modelled(result: &Result<(), SendError>, taken: bool, five: bool) -> Option<Mail> {
        let seen = match result {
            Ok(()) => Modelled::Sent,
            Err(SendError::Transient(_)) => Modelled::Transient,
            Err(SendError::Permanent(_)) => Modelled::Permanent,
            Err(SendError::Unavailable(_)) => Modelled::Unavailable,
            Err(SendError::Unknown(_)) => Modelled::Unknown,
        };
        let mut matching = Mail::ALL
            .into_iter()
            .filter(|m| m.seen() == seen && m.taken() == taken && m.five_hundred() == five);
        let found = matching.next();
        assert!(matching.next().is_none(), "ambiguous: {result:?}");
        found
    }

    /// Every SMTP reply, command by command, through the real mailer and classifier, is the
    /// model's outcome docs/guarantee.md gives it: a change to the classifier, or to what the model
    /// takes an outcome to be, shows here. SES's errors answer to the same `Mail::seen` in
    /// `tests/model/ses_outcomes.rs`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_smtp_reply_is_a_modelled_outcome() {
        use Mail::*;
        let session = [At::Greeting, At::Ehlo, At::StartTls, At::Auth];
        let mut rows: Vec<(At, Reply, Mail)> = vec![(At::EndOfData, Reply::Code(250), Accept)];
        for at in session {
            for code in [421, 432, 450, 451, 452, 454] {
                rows.push((at, Reply::Code(code), SessionRefused));
            }
            rows.push((at, Reply::Code(554), SessionRefused5xx));
            rows.push((at, Reply::Stall, SessionRefused));
            rows.push((at, Reply::Drop, SessionRefused));
        }
        for code in [421, 454] {
            rows.push((At::MailFrom, Reply::Code(code), SessionRefused));
        }
        for code in [530, 535] {
            rows.push((At::MailFrom, Reply::Code(code), SessionRefused5xx));
        }
        for code in [432, 450, 451, 452] {
            rows.push((At::MailFrom, Reply::Code(code), Refuse4xx));
        }
        rows.push((At::MailFrom, Reply::Code(550), Refuse5xx));
        for at in [At::RcptTo, At::Data, At::EndOfData] {
            for code in [421, 432, 450, 451, 452, 454] {
                rows.push((at, Reply::Code(code), Refuse4xx));
            }
            rows.push((at, Reply::Code(550), Refuse5xx));
            rows.push((at, Reply::Code(554), Refuse5xx));
        }
        for at in [At::MailFrom, At::RcptTo, At::Data] {
            // Before the message was handed over: the server cannot have it.
            rows.push((at, Reply::Stall, Refuse4xx));
            rows.push((at, Reply::Drop, Refuse4xx));
        }
        // After it was handed over: the server may have it.
        rows.push((At::EndOfData, Reply::Stall, AcceptLate));
        rows.push((At::EndOfData, Reply::Drop, AcceptLate));

        // All rows at once: a stalled row waits for its deadline.
        let mut running = tokio::task::JoinSet::new();
        for (at, reply, want) in rows {
            running.spawn(async move {
                let (port, taken) = table_server(at, reply).await;
                // (TLS parameters load the system's roots: only where STARTTLS is the row.)
                let tls = if at == At::StartTls {
                    "opportunistic"
                } else {
                    "none"
                };
                let url = format!("smtp://user:pass@127.0.0.1:{port}?tls={tls}");
                let result = mailer(&url, Duration::from_secs(2)).send(&message()).await;
                let five = matches!(reply, Reply::Code(c) if c >= 500);
                let got = modelled(&result, taken.load(Ordering::SeqCst), five);
                (got != Some(want))
                    .then(|| format!("{at:?} {reply:?}: want {want:?}, got {got:?} ({result:?})"))
            });
        }
        let wrong: Vec<String> = running.join_all().await.into_iter().flatten().collect();
        assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
    }

    #[tokio::test]
    async fn smtp_requiring_tls_refuses_a_server_without_starttls() {
        let (port, _seen) = scripted_server("250 test\r\n", First::Accept).await;
        session_refused(
            &format!("smtp://127.0.0.1:{port}?tls=required"),
            "no STARTTLS",
        )
        .await;
    }

    #[tokio::test]
    async fn smtp_unreachable_is_a_refused_session() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        session_refused(
            &format!("smtp://127.0.0.1:{port}?tls=none"),
            "nobody listens",
        )
        .await;
    }
}
