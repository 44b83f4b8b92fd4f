//! A `multipart/form-data` body read as axum's extractor reads it (multer), with a handle kept
//! on the body itself: the reader stops at the document's closing boundary, and an upload is
//! whole only once the body has ended where its `Content-Length` or last chunk says.

use axum::body::{BodyDataStream, Bytes};
use axum::extract::Request;
use axum::http::header;
use futures::{Stream, StreamExt};
use multer::Multipart;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

/// The request's body, shared between the multipart reader and the handler. The reader stops
/// at the document's closing boundary; what follows (an epilogue, the end of a chunked body,
/// or a connection that closes before the stated `Content-Length`) is read through the handle
/// kept here, so that an upload is whole only when its body is.
#[derive(Clone)]
pub struct SharedBody(Arc<Mutex<Inner>>);

struct Inner {
    body: BodyDataStream,
    /// Bytes read so far, by the reader (which buffers ahead of what it hands out) or the handler.
    read: u64,
}

/// How the rest of a body went.
pub enum Rest {
    /// It ended where its length, or its last chunk, says.
    Ended,
    /// It did not: cut short, or unreadable.
    Failed(axum::Error),
    /// More than the limit was read in all (the multipart reader's read-ahead included).
    Over,
}

impl SharedBody {
    /// How many bytes of the whole body have been read so far, by the reader or the handler.
    pub fn read(&self) -> u64 {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).read
    }

    /// Reads what is left of the body to its end, once the document has ended, throwing it
    /// away; `Over` as soon as more than `limit` bytes of the whole body have been read.
    pub async fn finish(&mut self, limit: u64) -> Rest {
        loop {
            if self.read() > limit {
                return Rest::Over;
            }
            match self.next().await {
                Some(Ok(_)) => {}
                Some(Err(e)) => return Rest::Failed(e),
                None => return Rest::Ended,
            }
        }
    }
}

impl Stream for SharedBody {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // Never contended: the reader and the handler take turns, and no poll awaits.
        let mut inner = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let next = inner.body.poll_next_unpin(cx);
        if let Poll::Ready(Some(Ok(chunk))) = &next {
            inner.read += chunk.len() as u64;
        }
        next
    }
}

/// The multipart reader of `request`'s body and a handle on that body; `None` when the body
/// is not `multipart/form-data` with a boundary.
pub fn multipart_of(request: Request) -> Option<(Multipart<'static>, SharedBody)> {
    let boundary = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|ct| multer::parse_boundary(ct).ok())?;
    let body = SharedBody(Arc::new(Mutex::new(Inner {
        body: request.into_body().into_data_stream(),
        read: 0,
    })));
    Some((Multipart::new(body.clone(), boundary), body))
}
