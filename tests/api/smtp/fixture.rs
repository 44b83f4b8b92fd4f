//! A real SMTP server for tests: it listens on a port, speaks enough SMTP for any client, records
//! what it accepted, and can be told to refuse the next messages (4xx or 5xx) or to answer slowly,
//! to refuse whole sessions (no greeting at all, a refused greeting, AUTH, or every message until
//! STARTTLS); or, for the chaos run, to refuse and stall a random share of messages.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One accepted message.
#[derive(Debug, Clone)]
pub struct Mail {
    pub recipients: Vec<String>,
    pub raw: String,
}

impl Mail {
    /// A header's value (first occurrence, unfolded).
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.raw.split("\r\n\r\n").next().unwrap_or("");
        let prefix = format!("{}:", name.to_ascii_lowercase());
        let mut lines = head.split("\r\n").peekable();
        while let Some(line) = lines.next() {
            if line.to_ascii_lowercase().starts_with(&prefix) {
                let mut value = line[prefix.len()..].trim().to_string();
                while let Some(next) = lines.peek() {
                    if next.starts_with(' ') || next.starts_with('\t') {
                        value.push(' ');
                        value.push_str(next.trim());
                        lines.next();
                    } else {
                        break;
                    }
                }
                return Some(value);
            }
        }
        None
    }

    /// The body with quoted-printable soft line breaks undone.
    pub fn text(&self) -> String {
        let body = self
            .raw
            .split_once("\r\n\r\n")
            .map(|(_, b)| b)
            .unwrap_or("");
        body.replace("=\r\n", "").replace("=3D", "=")
    }

    pub fn event_id(&self) -> String {
        self.header("X-Jobboard-Event-Id").unwrap_or_default()
    }
}

#[derive(Default)]
struct State {
    accepted: Vec<Mail>,
    /// Refuse the next messages with this reply, one per message.
    refusals: Vec<String>,
    delay: Duration,
    /// While set, every message waits (after its delay) before it is accepted.
    held: bool,
    /// Messages whose text contains the first part wait this much longer.
    stall: Option<(String, Duration)>,
    chaos: Option<Chaos>,
    /// The next message is accepted (kept) at once, but its reply comes this much later.
    answer_late: Option<Duration>,
    refused: usize,
    stalled: usize,
    /// Every session is refused this way while set.
    session_refusal: Option<SessionRefusal>,
    /// Sessions refused so far.
    sessions_refused: usize,
}

/// How a mail server refuses a whole session, whatever the message: each reply is the full
/// line, such as `535 5.7.8 Authentication credentials invalid`.
#[derive(Clone, Debug)]
pub enum SessionRefusal {
    /// No greeting at all: the connection is accepted and then left silent, as a tarpit or an
    /// overloaded relay does, until the client hangs up.
    Silent,
    /// The greeting itself (a server that serves no one, such as `554`), then the connection
    /// is closed.
    Greeting(String),
    /// Every `AUTH` (a wrong password: `535`).
    Auth(String),
    /// Every `MAIL FROM` (a server that wants STARTTLS first: `530`).
    MailFrom(String),
}

/// Random trouble: each message is refused (451) with one probability, or stalled past the
/// client's patience with another. A stalled message whose client hangs up before the reply is
/// not accepted, as a real server discards a transaction that lost its client.
#[derive(Clone, Copy, Debug)]
pub struct Chaos {
    pub refuse: f64,
    pub stall: f64,
    pub stall_for: Duration,
}

#[derive(Clone)]
pub struct SmtpServer {
    pub port: u16,
    state: Arc<Mutex<State>>,
}

impl SmtpServer {
    pub async fn start() -> SmtpServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind smtp");
        let port = listener.local_addr().unwrap().port();
        let state: Arc<Mutex<State>> = Arc::default();
        let s = state.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let s = s.clone();
                tokio::spawn(async move {
                    let _ = session(socket, s).await;
                });
            }
        });
        SmtpServer { port, state }
    }

    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}?tls=none", self.port)
    }

    /// Refuses the next `n` messages with a 451 (temporary) reply.
    pub fn fail_next(&self, n: usize) {
        let mut st = self.state.lock().unwrap();
        st.refusals
            .extend((0..n).map(|_| "451 4.3.0 try again later".to_string()));
    }

    /// Refuses the next message with a 554 (permanent) reply.
    pub fn reject_next(&self) {
        self.state
            .lock()
            .unwrap()
            .refusals
            .push("554 5.7.1 message rejected".to_string());
    }

    /// Refuses the next message with `reply` as written: lines joined by `\r\n` make a
    /// multi-line reply (`554-…` lines, then `554 …`).
    pub fn reject_next_with(&self, reply: &str) {
        self.state.lock().unwrap().refusals.push(reply.to_string());
    }

    /// Waits this long before accepting each message.
    pub fn set_delay(&self, d: Duration) {
        self.state.lock().unwrap().delay = d;
    }

    /// Accepts the next message at once but sends its reply only after `d`: a sender whose
    /// deadline is shorter sees a failure although the message was accepted.
    pub fn answer_next_late(&self, d: Duration) {
        self.state.lock().unwrap().answer_late = Some(d);
    }

    /// Holds every message (after its delay) until [`release`](Self::release): a send that
    /// stays in flight for as long as a test needs, without guessing how long that is.
    pub fn hold(&self) {
        self.state.lock().unwrap().held = true;
    }

    /// Lets held messages (and those to come) through.
    pub fn release(&self) {
        self.state.lock().unwrap().held = false;
    }

    /// Holds each message whose text contains `needle` this much longer before accepting it.
    pub fn stall_matching(&self, needle: &str, d: Duration) {
        self.state.lock().unwrap().stall = Some((needle.to_string(), d));
    }

    /// Refuses and stalls a random share of the messages from now on.
    #[allow(dead_code)] // the chaos run's (examples/chaos.rs)
    pub fn set_chaos(&self, chaos: Chaos) {
        self.state.lock().unwrap().chaos = Some(chaos);
    }

    /// Messages refused and stalled by [`Chaos`] so far.
    #[allow(dead_code)] // the chaos run's
    pub fn troubles(&self) -> (usize, usize) {
        let st = self.state.lock().unwrap();
        (st.refused, st.stalled)
    }

    /// Refuses every session as `refusal` says from now on, or none (`None`).
    pub fn refuse_sessions(&self, refusal: Option<SessionRefusal>) {
        self.state.lock().unwrap().session_refusal = refusal;
    }

    /// Sessions refused by [`refuse_sessions`](Self::refuse_sessions) so far.
    pub fn sessions_refused(&self) -> usize {
        self.state.lock().unwrap().sessions_refused
    }

    /// Forgets the messages accepted so far (a case's setup sent them).
    pub fn forget(&self) {
        self.state.lock().unwrap().accepted.clear();
    }

    pub fn mails(&self) -> Vec<Mail> {
        self.state.lock().unwrap().accepted.clone()
    }

    /// How many accepted messages carry each event id.
    pub fn count_for(&self, event_id: &str) -> usize {
        self.mails()
            .iter()
            .filter(|m| m.event_id() == event_id)
            .count()
    }
}

async fn session(socket: tokio::net::TcpStream, state: Arc<Mutex<State>>) -> std::io::Result<()> {
    let (read, mut write) = socket.into_split();
    let mut lines = BufReader::new(read);
    // The reply to a command this session refuses, if it is refused now.
    let refusal = |at: fn(&SessionRefusal) -> Option<&String>| {
        let mut st = state.lock().unwrap();
        let reply = st.session_refusal.as_ref().and_then(at).cloned();
        if reply.is_some() {
            st.sessions_refused += 1;
        }
        reply.map(|r| format!("{r}\r\n"))
    };
    let silent = {
        let mut st = state.lock().unwrap();
        let silent = matches!(st.session_refusal, Some(SessionRefusal::Silent));
        if silent {
            st.sessions_refused += 1;
        }
        silent
    };
    if silent {
        // Whatever the client says goes unanswered, until it gives up.
        let mut line = String::new();
        while lines.read_line(&mut line).await? > 0 {
            line.clear();
        }
        return Ok(());
    }
    if let Some(reply) = refusal(|r| match r {
        SessionRefusal::Greeting(reply) => Some(reply),
        _ => None,
    }) {
        write.write_all(reply.as_bytes()).await?;
        return Ok(());
    }
    write.write_all(b"220 fixture ESMTP ready\r\n").await?;
    let mut recipients = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let cmd = line.trim_end().to_ascii_uppercase();
        if cmd.starts_with("EHLO") {
            write
                .write_all(b"250-fixture\r\n250-8BITMIME\r\n250-AUTH PLAIN\r\n250 SMTPUTF8\r\n")
                .await?;
        } else if cmd.starts_with("AUTH") {
            // Any credentials are good unless sessions are refused at AUTH.
            let reply = refusal(|r| match r {
                SessionRefusal::Auth(reply) => Some(reply),
                _ => None,
            });
            let reply = reply.unwrap_or_else(|| "235 2.7.0 authenticated\r\n".to_string());
            write.write_all(reply.as_bytes()).await?;
        } else if cmd.starts_with("HELO") || cmd.starts_with("NOOP") {
            write.write_all(b"250 ok\r\n").await?;
        } else if cmd.starts_with("MAIL FROM") {
            recipients.clear();
            let reply = refusal(|r| match r {
                SessionRefusal::MailFrom(reply) => Some(reply),
                _ => None,
            });
            let reply = reply.unwrap_or_else(|| "250 ok\r\n".to_string());
            write.write_all(reply.as_bytes()).await?;
        } else if cmd.starts_with("RCPT TO") {
            recipients.push(line.trim_end()[8..].trim().to_string());
            write.write_all(b"250 ok\r\n").await?;
        } else if cmd == "DATA" {
            write.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await?;
            let mut raw = String::new();
            loop {
                line.clear();
                if lines.read_line(&mut line).await? == 0 {
                    return Ok(());
                }
                if line == ".\r\n" || line == ".\n" {
                    break;
                }
                let l = line.strip_prefix('.').unwrap_or(&line);
                raw.push_str(l);
            }
            let (refusal, delay, hang) = {
                let mut st = state.lock().unwrap();
                let mut refusal = if st.refusals.is_empty() {
                    None
                } else {
                    Some(st.refusals.remove(0))
                };
                let stall = match &st.stall {
                    Some((needle, d)) if raw.contains(needle.as_str()) => *d,
                    _ => Duration::ZERO,
                };
                let mut hang = None;
                if let (None, Some(chaos)) = (&refusal, st.chaos) {
                    let roll: f64 = rand::random();
                    if roll < chaos.refuse {
                        st.refused += 1;
                        refusal = Some("451 4.3.0 chaos: try again later".to_string());
                    } else if roll < chaos.refuse + chaos.stall {
                        st.stalled += 1;
                        hang = Some(chaos.stall_for);
                    }
                }
                (refusal, st.delay + stall, hang)
            };
            if let Some(reply) = refusal {
                write.write_all(format!("{reply}\r\n").as_bytes()).await?;
                continue;
            }
            tokio::time::sleep(delay).await;
            while state.lock().unwrap().held {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            if let Some(hang) = hang {
                // Accepted only if the client is still there when the stall ends.
                line.clear();
                match tokio::time::timeout(hang, lines.read_line(&mut line)).await {
                    Err(_) => {}
                    Ok(_) => return Ok(()),
                }
            }
            // Recorded before the reply goes out, so a client that has its 250 always finds
            // the mail here; taken back if the reply cannot be sent (the client is gone).
            let mail = Mail {
                recipients: recipients.clone(),
                raw: raw.replace("\r\n", "\n").replace('\n', "\r\n"),
            };
            let kept = mail.raw.clone();
            let late = {
                let mut st = state.lock().unwrap();
                st.accepted.push(mail);
                st.answer_late.take()
            };
            if let Some(late) = late {
                // Accepted for good: the reply is late, and the sender may be gone by then.
                tokio::time::sleep(late).await;
                let _ = write.write_all(b"250 2.0.0 queued\r\n").await;
                let _ = write.flush().await;
                return Ok(());
            }
            let sent = async {
                write.write_all(b"250 2.0.0 queued\r\n").await?;
                write.flush().await
            };
            if let Err(e) = sent.await {
                let mut st = state.lock().unwrap();
                if let Some(i) = st.accepted.iter().rposition(|m| m.raw == kept) {
                    st.accepted.remove(i);
                }
                return Err(e);
            }
        } else if cmd.starts_with("RSET") {
            recipients.clear();
            write.write_all(b"250 ok\r\n").await?;
        } else if cmd.starts_with("QUIT") {
            write.write_all(b"221 bye\r\n").await?;
            return Ok(());
        } else {
            write.write_all(b"502 command not implemented\r\n").await?;
        }
    }
}
