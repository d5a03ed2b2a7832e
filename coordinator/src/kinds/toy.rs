//! `toy` (test-only, feature `toy-kind`): the job is a range of draws; an upload's sum must
//! be the sum of its draws, checked by drawing them again, so a result settles alone; the
//! page shows the sum so far.

use super::{Batch, Headline, Served, Tx, Upload};
use crate::dashboard::{live, page as frame, progress};
use crate::error::{Error, Result};
use crate::experiments::{CellView, Detail};
use crate::ledger;
use crate::results::{Settled, mark_done, record_in_cell};
use crate::state::AppState;
use crate::verify::Texts;
use axum::response::Html;
use maud::html;
use shared::kinds::JobResult;
use shared::kinds::toy::{Toy, ToyJob, ToySpec, ToySum, sum};
use sqlx::PgConnection;
use uuid::Uuid;

impl Served for Toy {
    const REPLICATED: bool = false;
    const LOGS_GAMES: bool = false;

    fn job(seed: u64, _: &ToySpec, b: &Batch) -> Result<ToyJob> {
        Ok(ToyJob { seed, first: b.first_unit as u64, count: b.units as u64 })
    }

    async fn verify(
        _: &AppState,
        b: &Batch,
        spec: &ToySpec,
        result: ToySum,
        _: Texts,
    ) -> Result<std::result::Result<(), String>> {
        let want = sum(&Self::job(b.spec.seed, spec, b)?);
        Ok(if result.sum == want {
            Ok(())
        } else {
            Err(format!("result.sum: {}; the draws sum to {want}", result.sum))
        })
    }

    async fn check(_: &mut PgConnection, b: &Batch, result: &ToySum) -> Result<()> {
        if result.draws != b.units as u64 {
            return Err(Error::unprocessable(format!("result.draws: {}; the batch has {}", result.draws, b.units)));
        }
        Ok(())
    }

    fn replicable(result: &ToySum) -> ToySum {
        result.clone()
    }

    async fn settle(tx: &mut Tx<'_>, up: &Upload<'_>, _: &ToySpec, result: &ToySum) -> Result<Settled> {
        mark_done(tx, up.batch.id).await?;
        record_in_cell(tx, up.batch.cell_id, up.batch.units, None).await?;
        Ok(Settled::Told(format!("recorded {} draws", result.draws)))
    }

    async fn cell_finished(_: &mut Tx<'_>, _: &Self::Spec, _: Uuid, _: Uuid) -> Result<Option<String>> {
        Ok(None)
    }

    async fn page(st: &AppState, d: &Detail, spec: &ToySpec) -> Result<Html<String>> {
        let results: Vec<ledger::RecordedBatch> = sqlx::query_as(ledger::counted_results!("r.experiment_id = $1"))
            .bind(d.summary.id)
            .fetch_all(&st.db)
            .await?;
        let total: u64 =
            results.iter().filter_map(|r| if let JobResult::Toy(t) = &r.result.0 { Some(t.sum) } else { None }).sum();
        let s = &d.summary;
        let body = html! {
            p.meta { span class={ "status " (s.status) } #status { (s.status) } " toy: " (spec.draws) " draws" }
            p #progress { (progress(s.games, s.target_games)) " draws" }
            p #sum { "sum of the counted draws: " (total) }
        };
        Ok(frame(&s.name, live(&s.status), body))
    }

    fn headline(_: &ToySpec, _: &[CellView]) -> Headline {
        Headline::default()
    }
}
