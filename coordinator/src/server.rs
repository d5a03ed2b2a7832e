//! `coordinator serve`: the HTTP server and the reaper that returns expired leases.

use crate::cli::ServeArgs;
use crate::state::AppState;
use crate::{artifacts, db, error, logstore, queue, shed, verify};
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub async fn serve(url: Option<&str>, logs: logstore::LogStore, args: ServeArgs) -> Result<()> {
    let db = db::connect(url, args.db_pool).await?;
    db::migrate(&db, &logs).await?;
    if let Some(dir) = args.lexica.as_ref().filter(|d| !d.is_dir()) {
        anyhow::bail!(
            "--lexica {}: no such folder (it should hold enable.txt, enable.klv2, english.dist, standard15.layout \
             and enable.wpt)",
            dir.display()
        );
    }
    let read = artifacts::ensure_defaults(&db, &lexica_dir(args.lexica.clone())).await?;
    if !read && let Some(dir) = &args.lexica {
        // Info, not a warning: every restart of a coordinator started with --lexica says it.
        tracing::info!(
            lexica = %dir.display(),
            "the database already has default artifacts: --lexica was not read (`coordinator artifact` adds and sets defaults)"
        );
    }
    let listener =
        tokio::net::TcpListener::bind(args.bind).await.with_context(|| format!("cannot listen on {}", args.bind))?;
    let limit = match args.max_in_flight {
        0 => 4 * args.db_pool as usize,
        n => n as usize,
    };
    let admission = shed::Admission::new(limit);
    let state = AppState {
        db: db.clone(),
        cfg: Arc::new(args.config()),
        rules: verify::RulesCache::default(),
        admission: admission.clone(),
        logs,
        inflating: Arc::new(tokio::sync::Semaphore::new(crate::results::INFLATION_BUDGET_MIB as usize)),
    };
    let reaper = tokio::spawn(reaper(db, args, admission));
    tracing::info!(bind = %listener.local_addr()?, "serving");
    // Stdout line for scripts and tests that wait for the port.
    println!("listening on http://{}", listener.local_addr()?);
    serve_http(listener, crate::router::router(state), shutdown()).await;
    reaper.abort();
    Ok(())
}

/// Longest a connection may take to send a request's headers: a client that trickles them
/// (slowloris) is cut off here, before it reaches any handler or budget.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest a graceful shutdown waits for requests in service.
const DRAIN: Duration = Duration::from_secs(20);

/// Serve `app` on `listener` until `shutdown`, as `axum::serve` does (HTTP/1 and HTTP/2, the
/// peer's address as `ConnectInfo`), but with a header read timeout, which `axum::serve`
/// cannot set.
async fn serve_http(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    shutdown: impl std::future::Future<Output = ()>,
) {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use tower::ServiceExt as _;
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before accept: wait a
                    // moment rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let svc = app.clone().map_request(move |mut req: axum::http::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(axum::extract::ConnectInfo(peer));
            req.map(axum::body::Body::new)
        });
        let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
        builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), hyper_util::service::TowerToHyperService::new(svc))
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
        tracing::warn!("shutting down with requests still in service");
    }
}

/// Return expired leases to the queue, but never while Postgres or this coordinator's own
/// shedding may have kept workers from heartbeating: only once the database has answered this
/// process continuously, and it has refused no request, for a lease period (after the process
/// starts, after any failed query, after any shed request). An outage or an overload of the
/// coordinator is not the workers' failure, and work finished during it is accepted after it.
async fn reaper(db: sqlx::PgPool, args: ServeArgs, admission: Arc<shed::Admission>) {
    let grace = Duration::from_secs(args.lease_secs);
    let mut healthy_since = std::time::Instant::now();
    let mut shed_reported = 0;
    let mut tick = tokio::time::interval(Duration::from_secs(args.reap_secs.max(1)));
    loop {
        tick.tick().await;
        let shed = admission.shed_total();
        if shed > shed_reported {
            tracing::warn!(
                refused = shed - shed_reported,
                since_start = shed,
                "overloaded: refused claims, heartbeats or registrations with 503 Retry-After"
            );
            shed_reported = shed;
            healthy_since = std::time::Instant::now();
        }
        let done = if healthy_since.elapsed() < grace {
            sqlx::query("SELECT 1").execute(&db).await.map(drop).map_err(error::Error::from)
        } else {
            queue::reap(&db, args.max_failures, args.deadline_secs.max(args.lease_secs)).await.map(drop)
        };
        if let Err(e) = done {
            tracing::warn!(error = %e.message, "reaper: the database is not answering; no lease expires until it has answered for a lease period");
            healthy_since = std::time::Instant::now();
        }
    }
}

async fn shutdown() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = ctrl_c => {},
        _ = term.recv() => {},
    }
    tracing::info!("shutting down");
}

pub fn lexica_dir(arg: Option<PathBuf>) -> PathBuf {
    arg.unwrap_or_else(|| {
        let here = PathBuf::from("lexica");
        if here.join("enable.txt").exists() {
            here
        } else {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../lexica")
        }
    })
}
