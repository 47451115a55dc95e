//! The HTTP surface (`cmp-mcp serve`): MCP over Streamable HTTP at `/mcp` (rmcp's transport), and the
//! plain routes `GET|POST /v1/context`, `GET /v1/expand`, `POST /v1/query` and `POST /v1/tools/call`.
//! Every route calls [`tools::run`], exactly what the MCP tools call.
//!
//! Layers, outermost first: a bound on requests in flight (503 past it) and a per-request time limit
//! (504); a body size cap (413); the bearer token (401 without a valid one), whose grant fixes the
//! request's scope and write right (403 on a write with a read-only token). Beneath them, our own
//! accept loop: at most `--max-connections` open connections, each closed once it takes longer than
//! `--header-timeout-secs` to send a request's head (`axum::serve` sets no such timeout). No token,
//! secret or `Authorization` header is ever logged: this module logs nothing per request.

use crate::db::Db;
use crate::server::{CmpServer, Limits};
use crate::tokens::{self, Grant};
use crate::tools::{self, Ctx, Kind};
use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Query, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use futures::StreamExt;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// Settings of `cmp-mcp serve`.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Longest string argument (a task, a query, a memory), in bytes.
    pub max_text_bytes: usize,
    /// Requests in flight at once; more are answered 503.
    pub max_concurrent: usize,
    /// Time limit of one request.
    pub timeout: Duration,
    /// Time a connection may take to send a request's head, and may stay idle between requests.
    pub header_timeout: Duration,
    /// Open connections at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
    /// Live MCP sessions at once; an `initialize` past it is answered 503.
    pub max_sessions: usize,
    /// Host names accepted in the `Host` header of MCP requests besides the loopback ones.
    pub allowed_hosts: Vec<String>,
}

/// The MCP session header.
const MCP_SESSION_ID: &str = "mcp-session-id";

/// Default `--max-body-bytes`.
pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024;
/// Default `--max-concurrent`.
pub const DEFAULT_MAX_CONCURRENT: usize = 32;
/// Default `--timeout-secs`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `--header-timeout-secs`.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `--max-connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// Default `--max-sessions`. An MCP session holds memory until it has been idle 5 minutes: a fuzzing
/// pass (its script is not in this repository) opened 12,000 in a minute and the server reached
/// 1 GB, about 80 KB a session, so this bounds them to about 80 MB.
pub const DEFAULT_MAX_SESSIONS: usize = 1024;

#[derive(Clone)]
struct App {
    db: Db,
    cfg: Arc<Config>,
    in_flight: Arc<Semaphore>,
    /// Cancelled at shutdown, which ends open MCP event streams.
    stop: CancellationToken,
    /// The MCP sessions, and the id of the token that opened each.
    sessions: Arc<LocalSessionManager>,
    owners: Arc<std::sync::Mutex<HashMap<String, String>>>,
}

/// Owners kept before the ones of ended sessions are dropped.
const OWNERS_BEFORE_PRUNE: usize = 1024;

fn owners(app: &App) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
    app.owners.lock().unwrap_or_else(|p| p.into_inner())
}

/// Refuses a request naming an MCP session that another token opened (tool calls, the event
/// stream and DELETE alike).
fn session_refusal(app: &App, req: &Request, grant: &Grant) -> Option<Response> {
    let id = req.headers().get(MCP_SESSION_ID)?.to_str().ok()?;
    match owners(app).get(id) {
        Some(owner) if *owner != grant.token_id => {
            Some(error(StatusCode::FORBIDDEN, "this MCP session was opened with another token"))
        }
        _ => None,
    }
}

/// Records who opened a new MCP session, dropping the owners of sessions that have ended once there
/// are many.
async fn record_owner(app: &App, session: String, token_id: String) {
    let prune = {
        let mut o = owners(app);
        o.insert(session, token_id);
        o.len() > OWNERS_BEFORE_PRUNE
    };
    if prune {
        let live: std::collections::HashSet<String> =
            app.sessions.sessions.read().await.keys().map(|k| k.to_string()).collect();
        owners(app).retain(|id, _| live.contains(id));
    }
}

/// A JSON error response, `{"error": message}`.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let mut r = (status, axum::Json(json!({ "error": message.into() }))).into_response();
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    r
}

fn status_of(kind: Kind) -> StatusCode {
    match kind {
        Kind::Invalid => StatusCode::BAD_REQUEST,
        Kind::Forbidden => StatusCode::FORBIDDEN,
        Kind::UnknownTool => StatusCode::NOT_FOUND,
        Kind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Kind::Timeout => StatusCode::GATEWAY_TIMEOUT,
        Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Builds the router: the MCP endpoint, the `/v1` routes and every layer.
fn router(app: App) -> Router {
    let limits = Arc::new(Limits { max_text_bytes: app.cfg.max_text_bytes, call_timeout: Some(app.cfg.timeout) });
    let mut mcp_cfg = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(app.cfg.max_body_bytes)
        .with_cancellation_token(app.stop.clone());
    if app.cfg.listen.ip().is_loopback() {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
        hosts.extend(app.cfg.allowed_hosts.iter().cloned());
        mcp_cfg = mcp_cfg.with_allowed_origins(origins_of(&hosts)).with_allowed_hosts(hosts);
    } else if app.cfg.allowed_hosts.is_empty() {
        // Reachable from other machines under names we cannot know; every request needs a token.
        mcp_cfg = mcp_cfg.disable_allowed_hosts();
    } else {
        let hosts = app.cfg.allowed_hosts.clone();
        mcp_cfg = mcp_cfg.with_allowed_origins(origins_of(&hosts)).with_allowed_hosts(hosts);
    }
    let db = app.db.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(CmpServer::http(db.clone(), limits.clone())),
        app.sessions.clone(),
        mcp_cfg,
    );
    Router::new()
        .route("/v1/context", get(context).post(context))
        .route("/v1/expand", get(expand))
        .route("/v1/query", axum::routing::post(query))
        .route("/v1/tools/call", axum::routing::post(tools_call))
        .route_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(app.clone(), authenticate))
        .layer(DefaultBodyLimit::max(app.cfg.max_body_bytes))
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "no such route (routes: /mcp, /v1/context, /v1/expand, /v1/query, /v1/tools/call)",
            )
        })
        .layer(middleware::from_fn_with_state(app.clone(), bound))
        // Outside the bound: a load balancer's probe is answered however busy the server is.
        .route("/healthz", get(|| async { "ok" }))
        .with_state(app)
}

/// The browser origins `/mcp` accepts in an `Origin` header: a page served from one of the hosts the
/// `Host` check accepts, over http or https, on any port (or on the port a host names). A request
/// without the header (every client but a browser) passes; a page of another site is refused with
/// 403, whatever its `Host` (the MCP transport's rule against DNS rebinding and cross-site calls).
fn origins_of(hosts: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for h in hosts {
        let (host, any_port) = match h.matches(':').count() {
            0 => (h.clone(), true),
            1 => (h.clone(), false),
            _ => (format!("[{}]", h.trim_start_matches('[').trim_end_matches(']')), true),
        };
        for scheme in ["http", "https"] {
            out.push(if any_port { format!("{scheme}://{host}:*") } else { format!("{scheme}://{host}") });
        }
    }
    out
}

/// The in-flight bound and the time limit. An event stream (MCP) keeps its slot until it ends, and
/// ends at the time limit: an idle stream (the one a client opens with GET to hear from the server,
/// which this server never writes to) would otherwise hold its slot until the MCP session expires,
/// and a few dozen of them would refuse every other request (a fuzzing pass). A client reopens it.
async fn bound(State(app): State<App>, req: Request, next: Next) -> Response {
    let deadline = tokio::time::Instant::now() + app.cfg.timeout;
    let Ok(permit) = app.in_flight.clone().try_acquire_owned() else {
        let mut r = error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("server busy: {} requests already in flight; retry shortly", app.cfg.max_concurrent),
        );
        r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("1"));
        return r;
    };
    let response = match tokio::time::timeout(app.cfg.timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => {
            return error(
                StatusCode::GATEWAY_TIMEOUT,
                format!("request took longer than the {} s limit", app.cfg.timeout.as_secs_f64()),
            )
        }
    };
    let streaming = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !streaming {
        return response;
    }
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().take_until(tokio::time::sleep_until(deadline)).map(move |chunk| {
        let _slot = &permit;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// The bearer token of a request, if it carries one.
fn bearer(req: &Request) -> Option<String> {
    let value = req.headers().get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_string())
}

/// True when a JSON-RPC message (or batch) calls the `remember` tool.
fn calls_remember(v: &Value) -> bool {
    match v {
        Value::Array(batch) => batch.iter().any(calls_remember),
        Value::Object(m) => m.get("method") == Some(&json!("tools/call")) && v["params"]["name"] == json!("remember"),
        _ => false,
    }
}

/// 401 without a valid token; the grant goes into the request's extensions for the handlers (and, for
/// MCP, rmcp hands the request parts to the tool call). A read-only token's MCP write is a 403 here.
async fn authenticate(State(app): State<App>, mut req: Request, next: Next) -> Response {
    let Some(token) = bearer(&req) else {
        return error(StatusCode::UNAUTHORIZED, "missing bearer token: send the header Authorization: Bearer <token>");
    };
    let deadline = Some(Instant::now() + app.cfg.timeout);
    let grant = app.db.call(deadline, move |c| Ok(tokens::verify(c, &token)?)).await;
    let grant = match grant {
        Ok(Some(g)) => g,
        Ok(None) => return error(StatusCode::UNAUTHORIZED, "invalid or revoked bearer token"),
        Err(e) => return error(status_of(e.kind), e.message),
    };
    if grant.read_only && req.method() == Method::POST && req.uri().path() == "/mcp" {
        let (parts, body) = req.into_parts();
        let bytes = match axum::body::to_bytes(body, app.cfg.max_body_bytes).await {
            Ok(b) => b,
            Err(_) => return error(StatusCode::PAYLOAD_TOO_LARGE, too_large_message(&app)),
        };
        if let Some(v) = serde_json::from_slice::<Value>(&bytes).ok().filter(calls_remember) {
            // A JSON-RPC error body, so MCP clients show the reason, not just the status.
            let id = v.get("id").cloned().unwrap_or(Value::Null);
            let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": "remember: this token is read-only"}});
            return (StatusCode::FORBIDDEN, axum::Json(body)).into_response();
        }
        req = Request::from_parts(parts, Body::from(bytes));
    }
    let mcp = req.uri().path() == "/mcp";
    if mcp {
        if let Some(refused) = session_refusal(&app, &req, &grant) {
            return refused;
        }
    }
    let delete = req.method() == Method::DELETE;
    let opening = mcp && req.method() == Method::POST && !req.headers().contains_key(MCP_SESSION_ID);
    if opening && app.sessions.sessions.read().await.len() >= app.cfg.max_sessions {
        let (parts, body) = req.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, app.cfg.max_body_bytes).await else {
            return error(StatusCode::PAYLOAD_TOO_LARGE, too_large_message(&app));
        };
        if serde_json::from_slice::<Value>(&bytes).is_ok_and(|v| v["method"] == json!("initialize")) {
            let mut r = error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "server busy: {} MCP sessions are open; end one (DELETE /mcp) or retry when idle ones expire",
                    app.cfg.max_sessions
                ),
            );
            r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("60"));
            return r;
        }
        req = Request::from_parts(parts, Body::from(bytes));
    }
    let token_id = grant.token_id.clone();
    req.extensions_mut().insert(grant);
    let mut response = next.run(req).await;
    if opening {
        if let Some(id) = response.headers().get(MCP_SESSION_ID).and_then(|v| v.to_str().ok()) {
            record_owner(&app, id.to_string(), token_id).await;
        }
    }
    // rmcp acknowledges a session's DELETE with 202; clients expect 200 or 204 for a done deletion.
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

fn too_large_message(app: &App) -> String {
    format!("request body is larger than the limit of {} bytes", app.cfg.max_body_bytes)
}

/// Runs a tool for a grant and answers with its text, or its error as a status code.
async fn answer(app: &App, grant: Grant, tool: &str, args: Map<String, Value>) -> Response {
    let markdown = tool == "get_context" && args.get("format") == Some(&json!("markdown"));
    let ctx =
        Ctx { scope: grant.scope, session: None, read_only: grant.read_only, max_text_bytes: app.cfg.max_text_bytes };
    match tools::run(&app.db, tool, args, ctx, Some(Instant::now() + app.cfg.timeout)).await {
        Ok(text) => {
            let ct = if markdown { "text/markdown; charset=utf-8" } else { "application/json" };
            ([(CONTENT_TYPE, ct)], text).into_response()
        }
        Err(e) => error(status_of(e.kind), e.message),
    }
}

/// A request refused before any tool runs: its status and message.
struct Refusal(StatusCode, String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        error(self.0, self.1)
    }
}

/// Query parameters as tool arguments: `token_budget` as a number when it is one, a repeated name
/// refused.
fn query_args(
    route: &str,
    q: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Map<String, Value>, Refusal> {
    let Query(pairs) =
        q.map_err(|e| Refusal(StatusCode::BAD_REQUEST, format!("{route}: bad query string: {}", e.body_text())))?;
    let mut args = Map::new();
    for (k, v) in pairs {
        let value = query_value(&k, v);
        if args.insert(k.clone(), value).is_some() {
            return Err(Refusal(StatusCode::BAD_REQUEST, format!("{route}: parameter {k:?} is given twice")));
        }
    }
    Ok(args)
}

/// A query-string value as the tool's argument: `token_budget` a number when it reads as one (so the
/// tool says what is wrong with `1.5`), `audit` a boolean when it is `true` or `false`, the rest text.
fn query_value(key: &str, v: String) -> Value {
    match key {
        "token_budget" => match (v.parse::<i64>(), v.parse::<f64>()) {
            (Ok(n), _) => json!(n),
            (_, Ok(f)) if f.is_finite() => json!(f),
            _ => json!(v),
        },
        "audit" if v == "true" || v == "false" => json!(v == "true"),
        _ => json!(v),
    }
}

/// A JSON object body; empty means none.
fn body_object(
    app: &App,
    route: &str,
    body: Result<Bytes, BytesRejection>,
) -> Result<Option<Map<String, Value>>, Refusal> {
    let bytes = body.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => Refusal(StatusCode::PAYLOAD_TOO_LARGE, too_large_message(app)),
        s => Refusal(s, format!("{route}: cannot read the body: {}", e.body_text())),
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(other) => Err(Refusal(
            StatusCode::BAD_REQUEST,
            format!("{route}: the body must be a JSON object, got {}", kind_of(&other)),
        )),
        Err(e) => Err(Refusal(StatusCode::BAD_REQUEST, format!("{route}: the body is not valid JSON: {e}"))),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `GET|POST /v1/context`: task, model, token_budget, session_id, format, send, audit; from the query
/// string, a JSON body, or both (the body wins).
async fn context(
    State(app): State<App>,
    Extension(grant): Extension<Grant>,
    q: Result<Query<Vec<(String, String)>>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let route = "/v1/context";
    let mut args = match query_args(route, q) {
        Ok(a) => a,
        Err(r) => return r.into_response(),
    };
    match body_object(&app, route, body) {
        Ok(Some(b)) => args.extend(b),
        Ok(None) => {}
        Err(r) => return r.into_response(),
    }
    answer(&app, grant, "get_context", args).await
}

/// `GET /v1/expand?ref=…&direction=…`.
async fn expand(
    State(app): State<App>,
    Extension(grant): Extension<Grant>,
    q: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Response {
    match query_args("/v1/expand", q) {
        Ok(args) => answer(&app, grant, "expand", args).await,
        Err(r) => r.into_response(),
    }
}

/// `POST /v1/query` with the MQL object as the body.
async fn query(
    State(app): State<App>,
    Extension(grant): Extension<Grant>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match body_object(&app, "/v1/query", body) {
        Ok(Some(mql)) => answer(&app, grant, "query_memory", mql).await,
        Ok(None) => {
            error(StatusCode::BAD_REQUEST, "/v1/query: the body must be the MQL object, e.g. {\"find\": \"Atlas\"}")
        }
        Err(r) => r.into_response(),
    }
}

/// `POST /v1/tools/call` with `{"name": tool, "arguments": {…}}`.
async fn tools_call(
    State(app): State<App>,
    Extension(grant): Extension<Grant>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let route = "/v1/tools/call";
    let mut call = match body_object(&app, route, body) {
        Ok(Some(c)) => c,
        Ok(None) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("{route}: the body must be {{\"name\": …, \"arguments\": {{…}}}}"),
            )
        }
        Err(r) => return r.into_response(),
    };
    if let Some(k) = call.keys().find(|k| !["name", "arguments"].contains(&k.as_str())) {
        return error(StatusCode::BAD_REQUEST, format!("{route}: unknown field {k:?} (accepted: name, arguments)"));
    }
    let name = match call.remove("name") {
        Some(Value::String(n)) => n,
        Some(other) => {
            return error(StatusCode::BAD_REQUEST, format!("{route}: name must be a string, got {}", kind_of(&other)))
        }
        None => return error(StatusCode::BAD_REQUEST, format!("{route}: name is required")),
    };
    let args = match call.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => a,
        Some(other) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("{route}: arguments must be an object, got {}", kind_of(&other)),
            )
        }
    };
    answer(&app, grant, &name, args).await
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

/// Serves until Ctrl-C or SIGTERM. Refuses a non-loopback address while the database holds no live
/// token.
pub async fn serve(db: Db, cfg: Config) -> Result<(), String> {
    let live = db
        .call_plain(|c| {
            tokens::ensure_table(c)?;
            tokens::live_count(c)
        })
        .await?;
    if live == 0 && !cfg.listen.ip().is_loopback() {
        return Err(format!(
            "refusing to listen on {} (not a loopback address) with no live token in the database; \
             create one first: cmp-mcp token create --db PATH --scope SCOPE",
            cfg.listen
        ));
    }
    if live == 0 {
        eprintln!("cmp-mcp: warning: the database has no live token, so every request will get 401; create one with `cmp-mcp token create`");
    }
    let listener = TcpListener::bind(cfg.listen).await.map_err(|e| format!("cannot listen on {}: {e}", cfg.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!("cmp-mcp: listening on http://{addr} (MCP at /mcp; /v1/context, /v1/expand, /v1/query, /v1/tools/call)");
    let stop = CancellationToken::new();
    let app = App {
        db,
        in_flight: Arc::new(Semaphore::new(cfg.max_concurrent)),
        cfg: Arc::new(cfg),
        stop: stop.clone(),
        sessions: Arc::new(LocalSessionManager::default()),
        owners: Default::default(),
    };
    let signal = async move {
        shutdown().await;
        stop.cancel();
    };
    tokio::spawn(signal);
    accept_loop(listener, app).await;
    Ok(())
}

/// Accepts connections until `app.stop` is cancelled, at most `--max-connections` open at once: one
/// past the limit is closed as soon as it is accepted, so file descriptors stay bounded. Then waits
/// for the open connections to finish, at most the longer of the two time limits (streams end when
/// `stop` is cancelled; only a client that stops reading could hold one longer).
async fn accept_loop(listener: TcpListener, app: App) {
    let max = app.cfg.max_connections;
    let slots = Arc::new(Semaphore::new(max));
    let router = router(app.clone());
    let mut failing = false;
    loop {
        let accepted = tokio::select! {
            _ = app.stop.cancelled() => break,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) if matches!(e.kind(), ConnectionAborted | ConnectionReset | ConnectionRefused) => continue,
            Err(e) => {
                // Out of file descriptors (EMFILE) or the like: wait for some to close; log the first
                // error of a run of them only.
                if !failing {
                    eprintln!("cmp-mcp: cannot accept a connection ({e}); retrying");
                }
                failing = true;
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        failing = false;
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        tokio::spawn(serve_connection(stream, router.clone(), app.cfg.header_timeout, app.stop.clone(), slot));
    }
    drop(listener);
    let grace = app.cfg.timeout.max(app.cfg.header_timeout);
    let _ = tokio::time::timeout(grace, slots.acquire_many(max as u32)).await;
}

/// Serves one connection over HTTP/1.1 until it closes; once `stop` is cancelled, until its request
/// in flight is answered. hyper's header read timer (hyper 1.12, `proto/h1/conn.rs`) starts whenever
/// the connection waits for a request head (`poll_read_head`): at the accept, and again when a
/// response is done (`State::idle` resets the read state and asks for a read). It stops only when a
/// whole head has arrived, so it bounds a connection that sends nothing, a head trickled a byte at a
/// time and an idle keep-alive connection alike; it does not run while a response (an MCP event
/// stream) is being written. No route needs an HTTP upgrade (MCP Streamable HTTP is plain requests
/// and event streams, no WebSocket), so this is `serve_connection`, without upgrades.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    header_timeout: Duration,
    stop: CancellationToken,
    _slot: OwnedSemaphorePermit,
) {
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(header_timeout);
    let conn = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router));
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = stop.cancelled() => conn.as_mut().graceful_shutdown(),
    }
    let _ = conn.await;
}
