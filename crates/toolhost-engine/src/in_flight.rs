//! The requests in flight: each under one [`RequestKey`] with one cancellation handle (its
//! `CallControl`), whatever its front end. `notifications/cancelled`, a withdrawn hook
//! callback, an HTTP client that went away, a session's end and the router's wind down all
//! cancel through here.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
};

use serde_json::value::RawValue;

use super::{
    tasks, Client, Dispatch, Method, Progress, Reply, Request, RequestKey, Router, Scope, Tasks,
};
use crate::{
    model::{CancelledParams, ErrorCode},
    plugin::CallControl,
    sync::lock,
};

/// A request id already in flight for its client: a second request would take the first's
/// place for cancellation, leaving that one running with nobody able to stop it.
#[derive(Debug)]
pub struct Duplicate;

/// The requests in flight, by key.
#[derive(Default)]
pub(super) struct Requests {
    calls: Mutex<HashMap<RequestKey, Arc<CallControl>>>,
    /// Told when `calls` becomes empty.
    idle: tokio::sync::Notify,
    /// The session winds down: a request registered from now on is cancelled at once.
    closing: AtomicBool,
}

impl Requests {
    /// Registers a request's `control` under `key`. With `replace`, a newer request takes the
    /// key of one in flight (the control protocol: ids restart at 0 on a re-handshake);
    /// without, it is refused.
    pub(super) fn register(
        &self,
        key: &RequestKey,
        control: &Arc<CallControl>,
        replace: bool,
    ) -> Result<(), Duplicate> {
        let mut calls = lock(&self.calls);
        if !replace && calls.contains_key(key) {
            return Err(Duplicate);
        }
        if calls.insert(key.clone(), control.clone()).is_some() {
            tracing::debug!(?key, "request id reused while in flight");
        }
        drop(calls);
        if self.closing.load(Ordering::Acquire) {
            control.cancel();
        }
        Ok(())
    }

    /// Unregisters the request of `control` (unless a newer one took its key).
    pub(super) fn unregister(&self, key: &RequestKey, control: &Arc<CallControl>) {
        let mut calls = lock(&self.calls);
        if calls.get(key).is_some_and(|c| Arc::ptr_eq(c, control)) {
            calls.remove(key);
            if calls.is_empty() {
                self.idle.notify_waiters();
            }
        }
    }

    /// Cancels the request of `key`; false when none is in flight, or it was cancelled
    /// already.
    pub(super) fn cancel(&self, key: &RequestKey) -> bool {
        match lock(&self.calls).get(key) {
            Some(control) if control.is_cancelled() => false,
            Some(control) => {
                tracing::debug!(?key, "request cancelled");
                control.cancel();
                true
            }
            None => {
                tracing::debug!(?key, "cancel for a request not in flight");
                false
            }
        }
    }

    /// Cancels every request of `client` to `scope` (its session ended).
    pub(super) fn cancel_client(&self, scope: Scope<'_>, client: &str) {
        for (_, c) in lock(&self.calls)
            .iter()
            .filter(|(k, _)| k.of(scope, client))
        {
            c.cancel();
        }
    }

    /// Whether `client` of `scope` has a request in flight.
    pub(super) fn has_requests_of(&self, scope: Scope<'_>, client: &str) -> bool {
        lock(&self.calls).keys().any(|k| k.of(scope, client))
    }

    /// Cancels every request, and every one registered from now on.
    pub(super) fn close(&self) {
        self.closing.store(true, Ordering::Release);
        for c in lock(&self.calls).values() {
            c.cancel();
        }
    }

    pub(super) fn len(&self) -> usize {
        lock(&self.calls).len()
    }

    /// Waits until no request is in flight.
    pub(super) async fn idle(&self) {
        loop {
            let idle = self.idle.notified();
            if self.len() == 0 {
                return;
            }
            idle.await;
        }
    }
}

/// The router's side of the requests in flight: registered under their keys, cancelled,
/// waited for.
impl Router {
    /// A request of `method` to `plugin`, as if it came with JSON-RPC id `id` from `client`:
    /// registered for cancellation. How a method beyond `tools/call` is routed to a plugin: it
    /// then gets the lease, the placement, the timeout, the size limit and the one answer of
    /// every request. A reply when the id is in flight already (see [`Client::reuses_ids`]).
    pub fn request(
        self: &Arc<Self>,
        client: &Client<'_>,
        plugin: &str,
        id: &RawValue,
        method: Box<dyn Method>,
    ) -> Dispatch {
        let control = client.control(id.get(), None);
        self.registered(client, plugin, id, control, None, method)
    }

    /// Registers a request that its plugin answers in several calls one after the other (a
    /// hook event's hooks): `control` stands for it until [`Router::leave`], and each call is
    /// a [`Router::unkeyed`] request with a control [part of](CallControl::part_of) `control`.
    pub fn enter(
        &self,
        client: &Client<'_>,
        id: &RawValue,
        control: &Arc<CallControl>,
    ) -> Result<RequestKey, Duplicate> {
        let key = RequestKey::new(client.scope, client.id, id);
        self.requests.register(&key, control, client.reuses_ids)?;
        Ok(key)
    }

    /// The request [`Router::enter`] registered under `key` ended.
    pub fn leave(&self, key: &RequestKey, control: &Arc<CallControl>) {
        self.requests.unregister(key, control);
    }

    /// A request of `method` to `plugin` kept under no key of its own, so no client can cancel
    /// or reuse it by `id`: its cancellation comes through `control` alone. It is each call of
    /// a request [entered](Router::enter) in several (a hook event's hooks, with a control
    /// [part of](CallControl::part_of) the entered one), a task's run (cancelled through its
    /// task), and a request without a client (`toolhost call`, [`Router::run`]).
    pub fn unkeyed(
        self: &Arc<Self>,
        plugin: &str,
        id: &RawValue,
        method: Box<dyn Method>,
        control: Arc<CallControl>,
    ) -> Request {
        Request::new(
            self.clone(),
            plugin.to_string(),
            id.to_owned(),
            None,
            control,
            None,
            method,
        )
    }

    /// A request registered under its key, or the reply refusing a duplicate id.
    pub(crate) fn registered(
        self: &Arc<Self>,
        client: &Client<'_>,
        plugin: &str,
        id: &RawValue,
        control: Arc<CallControl>,
        progress: Option<Arc<Progress>>,
        method: Box<dyn Method>,
    ) -> Dispatch {
        let key = RequestKey::new(client.scope, client.id, id);
        if self
            .requests
            .register(&key, &control, client.reuses_ids)
            .is_err()
        {
            return refused(id);
        }
        Dispatch::Request(Request::new(
            self.clone(),
            plugin.to_string(),
            id.to_owned(),
            Some(key),
            control,
            progress,
            method,
        ))
    }

    /// Cancels the request of `key`, as `notifications/cancelled` would; false when none is
    /// in flight, or it was cancelled already.
    pub fn cancel_request(&self, key: &RequestKey) -> bool {
        self.requests.cancel(key)
    }

    /// `notifications/cancelled` from `client` of `scope`.
    pub(crate) fn cancel(
        &self,
        scope: Scope<'_>,
        client: &str,
        params: Option<&CancelledParams<'_>>,
    ) {
        let Some(p) = params else {
            tracing::warn!("notifications/cancelled without a valid requestId; ignored");
            return;
        };
        tracing::debug!(reason = ?p.reason, "cancelling");
        self.requests
            .cancel(&RequestKey::new(scope, client, p.request_id));
    }

    /// Cancels every request and task of `client` of `scope` (its session ended).
    pub fn cancel_client(&self, scope: Scope<'_>, client: &str) {
        self.requests.cancel_client(scope, client);
        self.tasks.end_owner(&tasks::owner_key(scope, client));
    }

    /// The calls kept as MCP tasks.
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// Whether `client` of `scope` has a request in flight.
    pub fn has_requests_of(&self, scope: Scope<'_>, client: &str) -> bool {
        self.requests.has_requests_of(scope, client)
    }

    /// Number of requests in flight (registered for cancellation, not answered yet).
    pub fn calls_in_flight(&self) -> usize {
        self.requests.len()
    }

    /// Waits until no request is in flight.
    pub async fn answered_all(&self) {
        self.requests.idle().await
    }

    /// Unregisters the request of `control` under `key` (unless a newer one took its key).
    pub(crate) fn unregister(&self, key: &RequestKey, control: &Arc<CallControl>) {
        self.requests.unregister(key, control);
    }
}

/// The refusal of a request whose id is in flight already (see [`Client::reuses_ids`]).
pub(crate) fn refused(id: &RawValue) -> Dispatch {
    Dispatch::Reply(Reply::error(
        Some(id),
        ErrorCode::INVALID_REQUEST,
        format!(
            "invalid request: request id {} is already in flight",
            id.get()
        ),
    ))
}
