//! `selfplay`: a match's job, checks and page (`super::matches`), each deal played once
//! (unpaired), and the page says what the games amount to as training data.

use super::{Batch, Headline, Served, Tx, Upload, matches};
use crate::error::Result;
use crate::experiments::{CellView, Detail};
use crate::results::{Settled, settle_replicated};
use crate::state::AppState;
use crate::verify::Texts;
use axum::response::Html;
use shared::kinds::matches::{MatchJob, MatchSpec};
use shared::kinds::selfplay::Selfplay;
use shared::stats::MatchTally;
use sqlx::PgConnection;
use uuid::Uuid;

impl Served for Selfplay {
    const REPLICATED: bool = true;
    const LOGS_GAMES: bool = true;

    fn job(seed: u64, _: &MatchSpec, batch: &Batch) -> Result<MatchJob> {
        matches::job(seed, batch)
    }

    async fn verify(
        st: &AppState,
        batch: &Batch,
        _: &MatchSpec,
        tally: MatchTally,
        logs: Texts,
    ) -> Result<std::result::Result<(), String>> {
        matches::verify(st, batch, batch.spec.seed, tally, logs, false).await
    }

    async fn check(_: &mut PgConnection, batch: &Batch, tally: &MatchTally) -> Result<()> {
        matches::check(batch, tally, false)
    }

    fn replicable(tally: &MatchTally) -> MatchTally {
        matches::replicable(tally)
    }

    async fn settle(tx: &mut Tx<'_>, up: &Upload<'_>, _: &MatchSpec, _: &MatchTally) -> Result<Settled> {
        settle_replicated(tx, up).await
    }

    async fn cell_finished(_: &mut Tx<'_>, _: &Self::Spec, _: Uuid, _: Uuid) -> Result<Option<String>> {
        Ok(None)
    }

    async fn page(st: &AppState, d: &Detail, spec: &MatchSpec) -> Result<Html<String>> {
        matches::page(st, d, spec, true).await
    }

    /// Self-play for data has no verdict.
    fn headline(_: &MatchSpec, _: &[CellView]) -> Headline {
        Headline::default()
    }
}
