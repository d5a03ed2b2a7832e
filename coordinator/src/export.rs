//! Exports for spreadsheets, scripts and trainers: an experiment's cells, counted batches,
//! contributors and endgame solutions as CSV (rates are fractions 0..1, empty where there is
//! nothing to say yet; fields quoted as RFC 4180 says), and its games as one gzip stream.
//!
//! # Design notes
//!
//! CSV downloads (RFC 4180): cells (the first eight columns are a contract), counted batches,
//! contributors, endgame solutions; and an experiment's games as one gzip stream (`games.gcg.gz`:
//! the counted batches' stored gzip members one after another, streamed from the log store as it
//! reads; `coordinator export` writes the same bytes), which `worker cnn assemble` reads.

use crate::endgames::{self, Outcome};
use crate::error::Error;
use crate::error::Result;
use crate::experiments::detail;
use crate::logstore::{Log, LogStore};
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::IntoResponse;
use futures_util::stream::{BoxStream, StreamExt, TryStreamExt};
use shared::kinds::JobKind;
use shared::protocol::JobResult;
use sqlx::types::Json as Db;
use uuid::Uuid;

/// A CSV document as a download named after its experiment.
fn csv(id: Uuid, what: &str, header_row: &str, rows: Vec<Vec<String>>) -> impl IntoResponse + use<> {
    let mut out = format!("{header_row}\n");
    for r in rows {
        out += &r.iter().map(|f| field(f)).collect::<Vec<_>>().join(",");
        out.push('\n');
    }
    let disposition = format!("attachment; filename=\"experiment-{id}-{what}.csv\"");
    ([(header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()), (header::CONTENT_DISPOSITION, disposition)], out)
}

/// RFC 4180: quoted when it holds a comma, a quote or a line break. Text that a spreadsheet
/// would read as a formula (leading `=`, `+`, `-`, `@`, tab or CR: a worker may name itself
/// `=cmd|' /C calc'!A0`) is written after a `'`, which spreadsheets show as text; numbers
/// (`-205`) are written as they are.
fn field(f: &str) -> String {
    let formula = f.starts_with(['=', '+', '-', '@', '\t', '\r']) && f.parse::<f64>().is_err();
    let f = if formula { format!("'{f}") } else { f.to_string() };
    if f.contains([',', '"', '\n', '\r']) { format!("\"{}\"", f.replace('"', "\"\"")) } else { f }
}

fn num(x: Option<f64>) -> String {
    x.map_or(String::new(), |v| format!("{v:.6}"))
}

/// A parameter value as written in the experiment file (strings without their quotes).
fn plain(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `GET /api/v1/experiments/{id}/cells.csv`: one row per cell; the first eight columns are a
/// contract (`cell,games,wins,draws,losses,win_rate,ci_low,ci_high`).
pub async fn cells(State(st): State<AppState>, Path(id): Path<Uuid>) -> Result<impl IntoResponse> {
    let d = detail(&st.db, id).await?;
    // One column per grid axis after the fixed ones (`axis.NAME`), so that a spreadsheet can
    // sort and pivot by each; `params` keeps them packed as before.
    let mut axes: Vec<&String> = d.cells.iter().flat_map(|c| c.params.keys()).collect();
    axes.sort();
    axes.dedup();
    let rows = d
        .cells
        .iter()
        .map(|c| {
            let params: Vec<String> = c.params.iter().map(|(k, v)| format!("{k}={}", plain(v))).collect();
            let [bot1, bot2] = c.bots.clone().unwrap_or_default();
            let mut row = vec![
                c.index.to_string(),
                c.games.to_string(),
                c.wins.to_string(),
                c.draws.to_string(),
                c.losses.to_string(),
                num(c.win_rate),
                num(c.ci_low),
                num(c.ci_high),
                c.status.clone(),
                c.stop_reason.clone().unwrap_or_default(),
                bot1,
                bot2,
                params.join(";"),
                format!("{:.3}", c.mean_score[0]),
                format!("{:.3}", c.mean_score[1]),
                format!("{:.3}", c.ms_per_move[0]),
                format!("{:.3}", c.ms_per_move[1]),
                num(c.sprt_llr),
                format!("{:?}", c.evidence).to_lowercase(),
                c.caveat.unwrap_or_default().to_string(),
                c.target_games.to_string(),
                c.id.to_string(),
            ];
            row.extend(axes.iter().map(|a| c.params.get(*a).map(plain).unwrap_or_default()));
            row
        })
        .collect();
    let mut header = "cell,games,wins,draws,losses,win_rate,ci_low,ci_high,status,stop_reason,bot1,bot2,params,mean_score1,mean_score2,ms_per_move1,ms_per_move2,sprt_llr,evidence,caveat,target_games,cell_id".to_string();
    for a in &axes {
        header += &format!(",{}", field(&format!("axis.{a}")));
    }
    Ok(csv(id, "cells", &header, rows))
}

/// One counted batch, with its cell's number and its worker's name.
#[derive(sqlx::FromRow)]
struct BatchRow {
    batch_id: Uuid,
    cell: i32,
    first_unit: i64,
    units: i64,
    worker: String,
    result: Db<JobResult>,
    elapsed_ms: i64,
    received_at: chrono::DateTime<chrono::Utc>,
}

/// `GET /api/v1/experiments/{id}/batches.csv`: every counted batch (one validated result per
/// done batch), by cell and units.
pub async fn batches(State(st): State<AppState>, Path(id): Path<Uuid>) -> Result<impl IntoResponse> {
    let mut list: Vec<BatchRow> = sqlx::query_as(
        "SELECT DISTINCT ON (r.batch_id) r.batch_id, c.idx AS cell, b.first_unit, b.units, w.name AS worker, r.result, r.elapsed_ms, r.received_at
         FROM batch_results r JOIN batches b ON b.id = r.batch_id JOIN cells c ON c.id = r.cell_id JOIN workers w ON w.id = r.worker_id
         WHERE r.state = 'valid' AND b.state = 'done' AND r.experiment_id = $1 ORDER BY r.batch_id, r.received_at",
    )
    .bind(id)
    .fetch_all(&st.db)
    .await?;
    list.sort_by_key(|b| (b.cell, b.first_unit));
    let rows =
        list.into_iter()
            .map(|b| {
                let (wins, draws, losses) =
                    b.result.0.tally().map_or_else(Default::default, |t| {
                        (t.wins.to_string(), t.draws.to_string(), t.losses.to_string())
                    });
                vec![
                    b.batch_id.to_string(),
                    b.cell.to_string(),
                    b.first_unit.to_string(),
                    b.units.to_string(),
                    b.result.0.kind().shown().to_string(),
                    b.result.0.games().to_string(),
                    wins,
                    draws,
                    losses,
                    b.worker,
                    b.elapsed_ms.to_string(),
                    b.received_at.to_rfc3339(),
                ]
            })
            .collect();
    Ok(csv(
        id,
        "batches",
        "batch_id,cell,first_unit,units,counted,done,wins,draws,losses,worker,elapsed_ms,received_at",
        rows,
    ))
}

/// `GET /api/v1/experiments/{id}/contributors.csv`: each worker's counted share.
pub async fn contributors(State(st): State<AppState>, Path(id): Path<Uuid>) -> Result<impl IntoResponse> {
    let d = detail(&st.db, id).await?;
    let rows = d
        .contributors
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                c.games.to_string(),
                d.summary.counted.to_string(),
                c.batches.to_string(),
                c.worker_id.to_string(),
            ]
        })
        .collect();
    Ok(csv(id, "contributors", "worker,done,counted,batches,worker_id", rows))
}

/// `GET /api/v1/experiments/{id}/endgames.csv`: one row per position: its agreed value (empty
/// until two workers agree), its state, and the shown solve's line.
pub async fn endgames(State(st): State<AppState>, Path(id): Path<Uuid>) -> Result<impl IntoResponse> {
    let solves = endgames::solves(&st.db, id).await?;
    let rows = endgames::positions(&solves)
        .iter()
        .map(|p| {
            let r = p.shown;
            let (value, state) = match p.agreed {
                Some(Outcome::Value(v)) => (v.to_string(), "agreed"),
                Some(Outcome::Skipped) => (String::new(), "skipped"),
                None if !p.disagreed.is_empty() => (String::new(), "disputed"),
                None if p.unverified.len() == p.solves => (String::new(), "unverified"),
                None => (String::new(), "unconfirmed"),
            };
            vec![
                p.index.to_string(),
                value,
                state.to_string(),
                if r.skipped { String::new() } else { r.value.to_string() },
                r.exact.to_string(),
                r.best.clone(),
                r.sequence.clone(),
                r.nodes.to_string(),
                r.ms.to_string(),
                p.solves.to_string(),
                p.agreed_by.join(";"),
                p.disagreed.join(";"),
                r.cgp.clone(),
            ]
        })
        .collect();
    Ok(csv(
        id,
        "endgames",
        "position,value,state,shown_value,shown_exact,best,sequence,nodes,ms,solves,agreed_by,disagreed,cgp",
        rows,
    ))
}

/// The counted batches of an experiment whose games were logged, in cell and deal order, as
/// (batch, lease) keys of their results. `None`: no such experiment.
pub async fn logged_batches(db: &sqlx::PgPool, id: Uuid) -> Result<Option<Vec<(Uuid, Uuid)>>> {
    let kind: Option<(String,)> =
        sqlx::query_as("SELECT kind FROM experiments WHERE id = $1").bind(id).fetch_optional(db).await?;
    let Some((kind,)) = kind else { return Ok(None) };
    let kind =
        JobKind::parse(&kind).ok_or_else(|| Error::internal(format!("experiment {id} of unknown kind `{kind}`")))?;
    if !crate::kinds::facts(kind).logs_games {
        return Err(Error::not_found(format!(
            "experiment {id} is a {} experiment: it logs no games (see its other exports)",
            kind.as_str()
        )));
    }
    let mut rows: Vec<(Uuid, Uuid, i32, i64)> = sqlx::query_as(
        "SELECT DISTINCT ON (r.batch_id) r.batch_id, r.lease_id, c.idx, b.first_unit
         FROM batch_results r JOIN batches b ON b.id = r.batch_id JOIN cells c ON c.id = r.cell_id
         WHERE r.state = 'valid' AND b.state = 'done' AND r.experiment_id = $1 ORDER BY r.batch_id, r.received_at",
    )
    .bind(id)
    .fetch_all(db)
    .await?;
    rows.sort_by_key(|r| (r.2, r.3));
    Ok(Some(rows.into_iter().map(|r| (r.0, r.1)).collect()))
}

/// One counted batch's GCG log, gzip-compressed as it was uploaded: from the log store, or
/// from its row where `logstore::migrate` has not moved it yet.
pub async fn batch_log(db: &sqlx::PgPool, logs: &LogStore, key: (Uuid, Uuid)) -> Result<Bytes> {
    let (sha, inline) = stored_log(db, key).await?;
    Ok(logs.get_or(Log::Gcg, &sha, inline).await?)
}

async fn stored_log(db: &sqlx::PgPool, (batch, lease): (Uuid, Uuid)) -> Result<(String, Option<Vec<u8>>)> {
    Ok(sqlx::query_as("SELECT gcg_sha256, gcg_gz FROM batch_results WHERE batch_id = $1 AND lease_id = $2")
        .bind(batch)
        .bind(lease)
        .fetch_one(db)
        .await?)
}

/// `GET /api/v1/experiments/{id}/games.gcg.gz`: every counted game, as the volunteers logged
/// it (each game after a `#lexhive-game N` line), in cell and deal order. The batches' gzip
/// members follow one another, which is one gzip stream to `zcat` and to
/// `worker cnn assemble`; streamed from the log store as it reads, so the coordinator holds a
/// chunk at a time whatever the experiment's size. `coordinator export` writes the same bytes
/// to a file.
pub async fn games(State(st): State<AppState>, Path(id): Path<Uuid>) -> Result<impl IntoResponse> {
    let batches = logged_batches(&st.db, id).await?.ok_or_else(|| Error::not_found(format!("no experiment {id}")))?;
    let (db, logs) = (st.db.clone(), st.logs.clone());
    let members = futures_util::stream::iter(batches).then(move |key| {
        let (db, logs) = (db.clone(), logs.clone());
        async move {
            let member: BoxStream<'static, std::io::Result<Bytes>> = match stored_log(&db, key).await {
                Ok((_, Some(inline))) => futures_util::stream::once(async { Ok(Bytes::from(inline)) }).boxed(),
                Ok((sha, None)) => match logs.stream(Log::Gcg, &sha).await {
                    Ok(s) => s.map_err(std::io::Error::other).boxed(),
                    Err(e) => futures_util::stream::once(async { Err(std::io::Error::other(e)) }).boxed(),
                },
                Err(e) => futures_util::stream::once(async move { Err(std::io::Error::other(e.message)) }).boxed(),
            };
            member
        }
    });
    let disposition = format!("attachment; filename=\"experiment-{id}-games.gcg.gz\"");
    Ok((
        [(header::CONTENT_TYPE, "application/gzip".to_string()), (header::CONTENT_DISPOSITION, disposition)],
        Body::from_stream(members.flatten()),
    ))
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn fields_are_quoted_and_formulas_neutralised() {
        assert_eq!(field("static"), "static");
        assert_eq!(field("softmax:t=1,bag=60"), "\"softmax:t=1,bag=60\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("-205"), "-205");
        assert_eq!(field("+1.5e3"), "+1.5e3");
        assert_eq!(field("=cmd|' /C calc'!A0"), "'=cmd|' /C calc'!A0");
        assert_eq!(field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(field("-1+cmd"), "'-1+cmd");
        assert_eq!(field("\tx"), "'\tx");
        assert_eq!(field("\r=1,2"), "\"'\r=1,2\"");
    }
}
