//! The answers the HTTP server (hyper) makes on its own, before any route or layer runs: 400 to
//! a request it cannot parse, 414 to a URI longer than it reads (64 KiB), 431 to a head larger
//! than its buffer. hyper writes them bare (a status line, `content-length: 0`, `date`) and
//! offers no hook to change them, so every connection a listener of ours accepts passes its
//! writes through [`Guarded`], which turns such an answer, on its way out, into what every other
//! answer is: the security headers of [`super::security_headers`], a problem+json body, and
//! `connection: close` (hyper closes the connection after it). An answer of ours is never
//! touched: it always carries `X-Content-Type-Options`, and hyper's own never does. Nor is a
//! body: hyper's answer is a head alone, the whole of the write that carries it, with no
//! length but 0; and the bodies this API sends (JSON, escaped HTML, its own assets) never hold
//! a raw head.

use super::error::{ApiError, PROBLEM_JSON};
use axum::http::StatusCode;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// A TCP listener whose connections are [`Guarded`].
pub struct GuardedListener(TcpListener);

/// `listener`, its connections guarded.
pub fn guarded(listener: TcpListener) -> GuardedListener {
    GuardedListener(listener)
}

impl axum::serve::Listener for GuardedListener {
    type Io = Guarded<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        // axum's own accept loop: an error (such as too many open files) is logged and waited
        // out.
        let (io, addr) = axum::serve::Listener::accept(&mut self.0).await;
        (
            Guarded {
                inner: io,
                pending: None,
            },
            addr,
        )
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

/// A connection whose writes are passed on unchanged, but for an answer of hyper's own, which
/// is replaced (see the module's comment).
pub struct Guarded<T> {
    inner: T,
    /// The replacement being written.
    pending: Option<Pending>,
}

struct Pending {
    bytes: Vec<u8>,
    written: usize,
    /// How many bytes of hyper's buffer the replacement stands for (its head).
    stands_for: usize,
}

impl<T: AsyncWrite + Unpin> Guarded<T> {
    /// Writes the rest of the replacement; then reports hyper's head as written. A write that
    /// returns pending is resumed when hyper calls again (with the same buffer, unconsumed).
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some(p) = self.pending.as_mut() else {
            return Poll::Ready(Ok(0));
        };
        while p.written < p.bytes.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &p.bytes[p.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            p.written += n;
        }
        let n = p.stands_for;
        self.pending = None;
        Poll::Ready(Ok(n))
    }
}

/// The most bytes an answer of hyper's own takes: a status line, `content-length: 0` and
/// `date` (about a hundred). A longer write is passed on without a look at its bytes.
const OWN_ANSWER_MAX: usize = 512;

/// The replacement of `buf`, if it is one of hyper's own answers, whole: 400, 414 or 431, a head
/// without `X-Content-Type-Options` and without a body. Every write of every connection passes
/// here, a file's body too: what is not a short head ending the write is passed at a glance,
/// never searched.
fn own_answer(buf: &[u8]) -> Option<Pending> {
    if buf.len() > OWN_ANSWER_MAX || !buf.starts_with(b"HTTP/1.") || !buf.ends_with(b"\r\n\r\n") {
        return None;
    }
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    if end + 4 != buf.len() {
        return None;
    }
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let code = status_line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| status_line.strip_prefix("HTTP/1.0 "))?
        .get(..3)?;
    let status = match code {
        "400" => StatusCode::BAD_REQUEST,
        "414" => StatusCode::URI_TOO_LONG,
        "431" => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        _ => return None,
    };
    let fields: Vec<(String, &str, &str)> = lines
        .map(|line| {
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            (name.trim().to_ascii_lowercase(), value.trim(), line)
        })
        .collect();
    let ours = fields.iter().any(|(name, value, _)| {
        name == "x-content-type-options"
            || name == "transfer-encoding"
            || (name == "content-length" && *value != "0")
    });
    if ours {
        return None;
    }
    let body = ApiError::from_status(status).body().to_string();
    let mut out = format!(
        "{status_line}\r\ncontent-type: {PROBLEM_JSON}\r\ncontent-length: {}\r\n\
         connection: close\r\nx-content-type-options: nosniff\r\nx-frame-options: DENY\r\n\
         referrer-policy: no-referrer\r\ncontent-security-policy: {}\r\n",
        body.len(),
        super::API_CSP,
    );
    for (name, _, line) in &fields {
        if name != "content-length" && name != "connection" {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("\r\n");
    out.push_str(&body);
    Some(Pending {
        bytes: out.into_bytes(),
        written: 0,
        stands_for: end + 4,
    })
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Guarded<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.pending.is_none() {
            match own_answer(buf) {
                Some(p) => this.pending = Some(p),
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        this.poll_pending(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.pending.is_none() {
            // hyper's answer is all there is to write.
            let mut given = bufs.iter().filter(|b| !b.is_empty());
            let only = match (given.next(), given.next()) {
                (Some(first), None) => own_answer(first),
                _ => None,
            };
            match only {
                Some(p) => this.pending = Some(p),
                None => return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs),
            }
        }
        this.poll_pending(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Guarded<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaced(head: &str) -> Option<String> {
        own_answer(head.as_bytes()).map(|p| String::from_utf8(p.bytes).unwrap())
    }

    #[test]
    fn hypers_bare_answers_get_the_headers_and_a_problem() {
        let bare = "HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: Mon, 01 Jun 2026 10:00:00 GMT\r\n\r\n";
        let out = replaced(bare).expect("replaced");
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{head}");
        for line in [
            "content-type: application/problem+json",
            "connection: close",
            "x-content-type-options: nosniff",
            "x-frame-options: DENY",
            "referrer-policy: no-referrer",
            "content-security-policy: default-src 'none'; frame-ancestors 'none'",
            "date: Mon, 01 Jun 2026 10:00:00 GMT",
            &format!("content-length: {}", body.len()),
        ] {
            assert!(head.lines().any(|l| l == line), "{line} in {head}");
        }
        assert_eq!(head.matches("content-length").count(), 1, "{head}");
        let problem: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(problem["status"], 414);
        assert_eq!(own_answer(bare.as_bytes()).unwrap().stands_for, bare.len());
        for status in ["400 Bad Request", "431 Request Header Fields Too Large"] {
            let bare = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
            assert!(replaced(&bare).is_some(), "{bare}");
        }
    }

    #[test]
    fn other_answers_pass_unchanged() {
        for head in [
            // Ours: they carry the headers already.
            "HTTP/1.1 400 Bad Request\r\nx-content-type-options: nosniff\r\ncontent-length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            // With a body: not hyper's.
            "HTTP/1.1 400 Bad Request\r\ncontent-length: 3\r\n\r\nabc",
            "HTTP/1.1 400 Bad Request\r\ntransfer-encoding: chunked\r\n\r\n",
            // Not a whole head, or not a head at all.
            "HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\n",
            "HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\n\r\nmore",
            "{\"a\": \"HTTP/1.1 414 URI Too Long\\r\\n\\r\\n\"}",
        ] {
            assert!(replaced(head).is_none(), "{head}");
        }
        // Past the most hyper's answer takes, a write is passed on without a look; within it, a
        // head with more fields than hyper's is still replaced.
        let head = |pad: usize| {
            format!(
                "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nx-pad: {}\r\n\r\n",
                "p".repeat(pad)
            )
        };
        let fits = head(OWN_ANSWER_MAX - 100);
        assert!(fits.len() <= OWN_ANSWER_MAX && replaced(&fits).is_some());
        assert!(replaced(&head(OWN_ANSWER_MAX)).is_none());
    }
}
