//! A response body handed to the connection in pieces, holding what its request holds (its
//! place among the requests in flight, its call's guard) until the last piece is taken.
//! The connection takes a piece only when its write buffer has room, so an answer its client
//! does not read keeps its request's place: unread answers are bounded by `--max-requests`,
//! not by the connections (docs/deploy.md, "Memory and open files").

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, SizeHint};

use super::reply::Body;

/// The largest piece handed to the connection at once.
const PIECE: usize = 16 << 10;

/// `body`, in pieces, keeping `keep` until its last piece is taken (or the connection drops
/// it).
pub(super) fn paced<K: Send + Unpin + 'static>(body: Body, keep: K) -> Body {
    Paced {
        inner: body,
        piece: Bytes::new(),
        ended: false,
        _keep: keep,
    }
    .boxed_unsync()
}

struct Paced<K> {
    inner: Body,
    /// What is left of the frame being handed out.
    piece: Bytes,
    ended: bool,
    _keep: K,
}

impl<K: Unpin> hyper::body::Body for Paced<K> {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        loop {
            if !this.piece.is_empty() {
                let n = this.piece.len().min(PIECE);
                return Poll::Ready(Some(Ok(Frame::data(this.piece.split_to(n)))));
            }
            if this.ended || this.inner.is_end_stream() {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => this.piece = data,
                    Err(other) => return Poll::Ready(Some(Ok(other))),
                },
                Poll::Ready(None) => this.ended = true,
                Poll::Ready(Some(Err(e))) => match e {},
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// Ended only once every piece is taken, so the connection asks until then.
    fn is_end_stream(&self) -> bool {
        self.piece.is_empty() && (self.ended || self.inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        let held = self.piece.len() as u64;
        let inner = self.inner.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + held);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + held);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Body as _;
    use std::sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    };

    struct Flag(Arc<AtomicBool>);

    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn pieces_keep_the_holding_until_the_last() {
        let dropped = Arc::new(AtomicBool::new(false));
        let text = vec![b'x'; 2 * PIECE + 5];
        let mut body = paced(
            super::super::reply::full(text.clone()),
            Flag(dropped.clone()),
        );
        assert_eq!(body.size_hint().exact(), Some(text.len() as u64));
        let mut got = Vec::new();
        let mut pieces = 0;
        while let Some(frame) = body.frame().await {
            let data = frame.unwrap().into_data().unwrap();
            assert!(data.len() <= PIECE);
            got.extend_from_slice(&data);
            pieces += 1;
            assert!(
                !dropped.load(Ordering::SeqCst),
                "released before the body was taken"
            );
        }
        assert_eq!((got, pieces), (text, 3));
        drop(body);
        assert!(dropped.load(Ordering::SeqCst));
    }
}
