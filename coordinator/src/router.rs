//! The HTTP surface: every route, its admission and body limits, and the few handlers that
//! belong to no module (the API description, the version, the health check).

use crate::state::AppState;
use crate::{artifacts, auth, dashboard, endgames, error, experiments, export, owners, queue, results, shed, workers};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use std::time::Duration;

/// Longest a registration may take, body included: a person's client sends a few hundred
/// bytes at once.
const REGISTRATION_TIMEOUT: Duration = Duration::from_secs(10);

pub fn router(state: AppState) -> Router {
    let upload_cap = state.cfg.max_upload_bytes;
    let admission = state.admission.clone();
    // What a volunteer simply repeats later, uploads included: refused first when the database
    // is saturated (the reaper then charges nobody for the leases that run out meanwhile).
    let repeatable = Router::new()
        .route("/claim", post(queue::claim))
        .route("/batches/{id}/heartbeat", post(queue::heartbeat))
        .route("/batches/{id}/result", post(results::upload).layer(DefaultBodyLimit::max(upload_cap)))
        .route_layer(axum::middleware::from_fn_with_state(admission.clone(), shed::shed));
    // What anyone may call without a token: a small budget of its own, and a short deadline, so
    // that slow or many registrations never take the workers' budget.
    let strangers = shed::Admission::new(state.cfg.max_registrations_in_flight as usize);
    let registration = Router::new()
        .route("/workers/register", post(queue::register))
        .route("/owners", post(owners::register))
        .route_layer(axum::middleware::from_fn_with_state(strangers.clone(), shed::shed))
        .route_layer(axum::middleware::from_fn_with_state(strangers, shed::count))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            axum::http::StatusCode::REQUEST_TIMEOUT,
            REGISTRATION_TIMEOUT,
        ))
        .layer(axum::middleware::map_response(close_unless_served));
    let api = Router::new()
        .route("/experiments", get(experiments::api_list).post(experiments::submit))
        .route("/experiments/{id}", get(experiments::api_detail).delete(experiments::delete))
        .route("/experiments/{id}/priority", post(experiments::reprioritise))
        .route("/experiments/{id}/stop", post(experiments::stop))
        .route("/experiments/{id}/batches", get(results::list))
        .route("/experiments/{id}/history", get(experiments::api_history))
        .route("/experiments/{id}/cells.csv", get(export::cells))
        .route("/experiments/{id}/batches.csv", get(export::batches))
        .route("/experiments/{id}/contributors.csv", get(export::contributors))
        .route("/experiments/{id}/endgames.csv", get(export::endgames))
        .route("/experiments/{id}/games.gcg.gz", get(export::games))
        .route("/experiments/{id}/endgames", get(endgames::api_solves))
        .route("/workers", get(workers::api_list))
        .route("/openapi.json", get(openapi))
        .route("/version", get(version))
        .route("/whoami", get(auth::whoami))
        .route("/batches/{id}/release", post(queue::release))
        .route("/batches/{id}/fail", post(queue::fail))
        .route("/batches/{id}/logs/{which}", get(results::logs))
        .route("/artifacts/{sha256}", get(artifacts::get))
        .merge(repeatable)
        .route_layer(axum::middleware::from_fn_with_state(admission, shed::count))
        .merge(registration);
    Router::new()
        .nest("/api/v1", api)
        .route("/", get(dashboard::experiments))
        .route("/experiments/{id}", get(dashboard::experiment))
        .route("/workers", get(dashboard::workers))
        .route("/healthz", get(healthz))
        .layer(DefaultBodyLimit::max(1 << 20))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            axum::http::StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(60),
        ))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(state)
}

/// A registration cut off by its deadline, or refused by its budget, may have left its body
/// unread: the connection is closed rather than kept for a client that trickles.
async fn close_unless_served(mut r: axum::response::Response) -> axum::response::Response {
    if matches!(r.status(), axum::http::StatusCode::REQUEST_TIMEOUT | axum::http::StatusCode::SERVICE_UNAVAILABLE) {
        r.headers_mut().insert(axum::http::header::CONNECTION, axum::http::HeaderValue::from_static("close"));
    }
    r
}

/// `GET /api/v1/openapi.json`: the API described (OpenAPI 3.1); the end-to-end tests check
/// real responses against it.
async fn openapi() -> impl axum::response::IntoResponse {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], include_str!("../openapi.json"))
}

/// `GET /api/v1/version`: the service, its protocol and build, and the proof of work a
/// registration needs, for volunteers to check first.
async fn version(axum::extract::State(st): axum::extract::State<AppState>) -> axum::Json<shared::protocol::Version> {
    axum::Json(shared::protocol::Version {
        service: shared::protocol::SERVICE.into(),
        protocol: shared::PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").into(),
        registration_work: st.cfg.registration_work,
    })
}

async fn healthz(axum::extract::State(st): axum::extract::State<AppState>) -> Result<&'static str, error::Error> {
    sqlx::query("SELECT 1").execute(&st.db).await?;
    Ok("ok\n")
}
