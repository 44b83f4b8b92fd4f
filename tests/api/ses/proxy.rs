//! An HTTP proxy in front of the SES endpoint that the test controls: it forwards each request
//! whole to the real server and can then answer late or not at all, so that the server has
//! the message while the client cannot know it; or it closes its port, so that a connection is
//! refused before any request is written. It counts the `SendEmail` requests it forwarded.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What happens to the answer of the next `SendEmail` request, once the server has it.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The answer is held this long before it is passed on.
    Late(Duration),
    /// The connection is closed instead of the answer.
    Cut,
}

pub struct SesProxy {
    pub port: u16,
    sends: Arc<AtomicUsize>,
    next: Arc<Mutex<Option<Fault>>>,
    refusing: watch::Sender<bool>,
}

/// The request path of SES v2 `SendEmail`.
const SEND_EMAIL: &str = "POST /v2/email/outbound-emails ";

impl SesProxy {
    pub async fn start(target: &str) -> SesProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let sends = Arc::new(AtomicUsize::new(0));
        let next = Arc::new(Mutex::new(None));
        let (refusing, mut refused) = watch::channel(false);
        let (target, counted, faults) = (target.to_string(), sends.clone(), next.clone());
        tokio::spawn(async move {
            let mut listener = Some(listener);
            loop {
                let Some(open) = &listener else {
                    // The port is closed: connections are refused until it opens again.
                    if refused.wait_for(|r| !*r).await.is_err() {
                        return;
                    }
                    listener = Some(rebind(port).await);
                    continue;
                };
                tokio::select! {
                    accepted = open.accept() => {
                        let Ok((client, _)) = accepted else { continue };
                        let (target, counted, faults) = (target.clone(), counted.clone(), faults.clone());
                        tokio::spawn(serve(client, target, counted, faults));
                    }
                    changed = refused.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        if *refused.borrow_and_update() {
                            listener = None;
                        }
                    }
                }
            }
        });
        SesProxy {
            port,
            sends,
            next,
            refusing,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// How many `SendEmail` requests reached the server through this proxy.
    pub fn sends(&self) -> usize {
        self.sends.load(Ordering::SeqCst)
    }

    /// The next `SendEmail` reaches the server, whose answer is passed on only after `d`.
    pub fn answer_next_late(&self, d: Duration) {
        *self.next.lock().unwrap() = Some(Fault::Late(d));
    }

    /// The next `SendEmail` reaches the server, and its connection is closed instead of the
    /// answer.
    pub fn cut_next_answer(&self) {
        *self.next.lock().unwrap() = Some(Fault::Cut);
    }

    /// Closes the port: every new connection is refused before a request could be written.
    pub fn refuse(&self) {
        self.refusing.send_replace(true);
    }

    pub fn restore(&self) {
        self.refusing.send_replace(false);
    }
}

/// The same port again, once the closed listener has let it go.
async fn rebind(port: u16) -> TcpListener {
    for _ in 0..100 {
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port)).await {
            return listener;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the proxy could not open port {port} again");
}

/// One request from `client`, forwarded on a connection of its own; the answer goes back with
/// `Connection: close`, so that the client opens a new connection for its next request.
async fn serve(
    mut client: TcpStream,
    target: String,
    sends: Arc<AtomicUsize>,
    faults: Arc<Mutex<Option<Fault>>>,
) {
    let Some(request) = read_message(&mut client).await else {
        return;
    };
    let Ok(mut server) = TcpStream::connect(&target).await else {
        return;
    };
    let request = with_connection_close(&request);
    if server.write_all(&request).await.is_err() {
        return;
    }
    let mut answer = Vec::new();
    if server.read_to_end(&mut answer).await.is_err() {
        return;
    }
    let fault = if request.starts_with(SEND_EMAIL.as_bytes()) {
        sends.fetch_add(1, Ordering::SeqCst);
        faults.lock().unwrap().take()
    } else {
        None
    };
    match fault {
        Some(Fault::Cut) => return,
        Some(Fault::Late(d)) => tokio::time::sleep(d).await,
        None => {}
    }
    // The client may be gone by now: that is what a late answer is for.
    if client
        .write_all(&with_connection_close(&answer))
        .await
        .is_ok()
    {
        client.shutdown().await.ok();
    }
}

/// An HTTP/1.1 message's head and its `Content-Length` body.
async fn read_message(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut message = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = message.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        message.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&message[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while message.len() < head_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        message.extend_from_slice(&chunk[..n]);
    }
    Some(message)
}

/// The message with its `Connection` header replaced by `Connection: close`.
fn with_connection_close(message: &[u8]) -> Vec<u8> {
    let Some(head_end) = message.windows(4).position(|w| w == b"\r\n\r\n") else {
        return message.to_vec();
    };
    let head = String::from_utf8_lossy(&message[..head_end]);
    let mut out: Vec<u8> = Vec::with_capacity(message.len() + 19);
    for line in head.split("\r\n") {
        if !line.to_ascii_lowercase().starts_with("connection:") {
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out.extend_from_slice(&message[head_end + 4..]);
    out
}
