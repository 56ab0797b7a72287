//! The router's notices (progress), shared by a forwarding task and the call tasks: a call
//! drains the queue before sending its reply, so its progress never arrives after its result.
//! Each notice is handed on while the lock is held, which keeps that order total.

use std::{
    sync::{Arc, Mutex},
    task::Poll,
};

use tokio::sync::mpsc;

use crate::handler::Notice;

#[derive(Clone)]
pub(crate) struct NoticeQueue(Arc<Mutex<mpsc::UnboundedReceiver<Notice>>>);

impl NoticeQueue {
    pub fn new(rx: mpsc::UnboundedReceiver<Notice>) -> Self {
        NoticeQueue(Arc::new(Mutex::new(rx)))
    }

    /// Hands each notice to `send` as it comes, until the router is gone.
    pub async fn forward(&self, send: impl Fn(Notice)) {
        std::future::poll_fn(|cx| {
            let mut rx = self.0.lock().unwrap();
            loop {
                match rx.poll_recv(cx) {
                    Poll::Ready(Some(n)) => send(n),
                    Poll::Ready(None) => return Poll::Ready(()),
                    Poll::Pending => return Poll::Pending,
                }
            }
        })
        .await
    }

    /// Hands on every notice already queued.
    pub fn drain(&self, send: impl Fn(Notice)) {
        let mut rx = self.0.lock().unwrap();
        while let Ok(n) = rx.try_recv() {
            send(n);
        }
    }
}
