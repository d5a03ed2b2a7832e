//! Requests and responses between coordinator and worker (JSON over HTTP, `/api/v1/...`).
//!
//! The flow: a volunteer registers once ([`RegisterRequest`]) and keeps its token; then it
//! claims a batch ([`ClaimRequest`] -> [`ClaimResponse`]), fetches the [`ArtifactRef`]s it lacks,
//! heartbeats while it plays, and uploads a [`ResultUpload`] under the lease it was given.
//!
//! # Evolving the protocol
//!
//! Every claim names the job kinds the worker runs ([`ClaimRequest::kinds`]), and the
//! coordinator hands it batches of those kinds only. So:
//! - **A new job kind** (a new module in [`crate::kinds`]) does not bump
//!   [`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION): older workers never name it and are never
//!   given it. A worker that is sent a job it cannot decode anyway releases it at once.
//! - **A new optional field** (`#[serde(default)]` on the reader's side) does not bump it.
//! - **Anything an older peer would misread** — a field removed, renamed or given a new
//!   meaning, a changed unit, a new required field — bumps it. The coordinator then refuses
//!   the older workers with HTTP 426 and a message asking the volunteer to upgrade, rather than
//!   leasing them work they would fail.
//!
//! # Design notes
//!
//! `PROTOCOL_VERSION` and every request/response body: register, claim
//! (`ClaimResponse::Batch(BatchSpec) | Idle`), heartbeat, release, fail, result upload (a
//! `JobResult` plus gzip+base64 GCG/CSV logs and their sha256), artifacts by sha256. Jobs are an
//! enum tagged by `kind` (`match`, `endgame`, `wintable`, `selfplay`: a `MatchJob` whose game `i`
//! is deal `i`, tallied unpaired); `Job::units` and `JobResult::units` are what the coordinator
//! counts (`JobKind::unit`). Workers name the kinds they run on every claim, with their measured
//! units per second for each, and their `Capabilities` (ONNX Runtime loads, CUDA works, the GPU),
//! matched against what an experiment `needs` (`experiment::needs`: `onnx` for a CNN bot, `cuda`
//! for `gpu = true`); the module's documentation has the rules for when a change bumps
//! `PROTOCOL_VERSION` (now 2) and when it need not.

use crate::kinds::JobKind;
pub use crate::kinds::{Job, JobResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use uuid::Uuid;

/// `GET /api/v1/version`: what a volunteer checks before anything else, so that a wrong URL or
/// a coordinator of another protocol is one clear line, not a retry loop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Version {
    /// Always `lexhive`.
    pub service: String,
    /// The [`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION) the coordinator speaks.
    pub protocol: u32,
    /// The coordinator's build (its crate version).
    pub version: String,
    /// Leading zero bits an owner registration's proof of work needs (the `work` module), and a
    /// worker registration's without an owner token. 0: none.
    #[serde(default)]
    pub registration_work: u32,
}

/// `GET /api/v1/whoami`: what a token is.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Whoami {
    /// `worker`, `owner`, `researcher` or `admin`.
    pub role: String,
    /// A worker token's worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<Uuid>,
}

/// [`Version::service`].
pub const SERVICE: &str = "lexhive";

/// The role of a value net a bot names (`cnn:model=SHA256`).
pub const MODEL: &str = "model";

/// The role, in a batch's artifacts, of a leave table a bot names for itself
/// (`static:leaves=SHA256`); stored on the coordinator as a `leaves` artifact.
pub const BOT_LEAVES: &str = "bot-leaves";

/// A data file a job needs, addressed by the sha256 of its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRef {
    /// What the job uses it as: `lexicon`, `leaves` (the match's table), `distribution`,
    /// `layout`, `winpct`, or one of a bot's own: [`MODEL`] (a value net its spec names by
    /// sha256) or [`BOT_LEAVES`] (a leave table its spec names by `leaves=SHA256`).
    pub role: String,
    /// The file name it was registered under (its extension says its format).
    pub name: String,
    pub sha256: String,
    pub size: u64,
}

/// What a worker can run beyond the engine itself, said when it registers and with every
/// claim (a volunteer whose ONNX Runtime stops loading says so at its next claim). An
/// experiment's batches go only to workers that have all it needs
/// (`experiment::needs`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// ONNX Runtime loads: CNN bots can play.
    #[serde(default)]
    pub onnx: bool,
    /// CNN inference runs on a GPU through CUDA.
    #[serde(default)]
    pub cuda: bool,
    /// The GPU, where one answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<Gpu>,
}

/// A worker's GPU, as its driver names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gpu {
    pub name: String,
    pub memory_mb: u64,
}

/// [`Capabilities::onnx`] by name, as experiments need it.
pub const ONNX: &str = "onnx";
/// [`Capabilities::cuda`] by name.
pub const CUDA: &str = "cuda";

impl Capabilities {
    /// The capabilities by name, for matching against what experiments need.
    pub fn names(&self) -> Vec<String> {
        [(self.onnx, ONNX), (self.cuda, CUDA)].into_iter().filter(|(has, _)| *has).map(|(_, n)| n.into()).collect()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RegisterRequest {
    pub protocol: u32,
    pub name: String,
    pub threads: u32,
    /// The job kinds this worker runs, by name ([`JobKind::as_str`]). Names this side does
    /// not know are ignored: they are kinds added after it was built.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Registers the worker under this owner (`POST /api/v1/owners` made it); without one, and
    /// where registration is open, the worker gets an owner of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_token: Option<String>,
    #[serde(default)]
    pub capabilities: Capabilities,
    /// Proof of work (the `work` module's, as `worker` of `name`): needed without an owner token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<u64>,
}

/// `POST /api/v1/owners`: an owner account, under which workers register.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OwnerRequest {
    pub name: String,
    /// Needed where registration is by invitation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invitation: Option<String>,
    /// Proof of work (the `work` module's, as `owner` of `name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OwnerResponse {
    pub owner_id: Uuid,
    /// Registers workers under this owner (`worker volunteer --owner-token`); the only copy.
    pub token: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RegisterResponse {
    pub worker_id: Uuid,
    /// The bearer token; the coordinator keeps only its hash, so this is the only copy.
    pub token: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClaimRequest {
    pub protocol: u32,
    pub threads: u32,
    /// The job kinds this worker runs, by name: it is handed batches of these only. (Absent
    /// from protocol 1 claims, which are refused before it matters.)
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Units of work per second ([`Job::units`]) this worker measured on its last batch of
    /// each kind, by kind name, for sizing the next batch of that kind.
    #[serde(default)]
    pub rates: BTreeMap<String, f64>,
    #[serde(default)]
    pub capabilities: Capabilities,
}

/// The kinds among `names` that this build knows, in order, without repeats.
pub fn known_kinds(names: &[String]) -> Vec<JobKind> {
    let mut kinds: Vec<JobKind> = names.iter().filter_map(|n| JobKind::parse(n)).collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum ClaimResponse {
    Batch(Box<BatchSpec>),
    /// No runnable work now; ask again after this long.
    Idle {
        retry_after_ms: u64,
        /// Work this worker could be given is leased to others now, and comes back if their
        /// leases run out: a volunteer told to exit when idle waits for it.
        #[serde(default)]
        unfinished: bool,
        /// Queued batches of the kinds this worker runs that it may not take because its owner
        /// played what they check (replicas, cross-checks) or it is not trusted: they wait for
        /// a worker of another owner.
        #[serde(default)]
        waiting_for_others: u64,
    },
}

/// A leased unit of work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchSpec {
    pub batch_id: Uuid,
    /// Identifies this lease: heartbeats and the upload must quote it.
    pub lease_id: Uuid,
    pub lease_secs: u64,
    pub heartbeat_secs: u64,
    pub experiment_id: Uuid,
    pub experiment_name: String,
    pub cell_id: Uuid,
    pub cell_index: u32,
    pub artifacts: Vec<ArtifactRef>,
    pub job: Job,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HeartbeatRequest {
    pub lease_id: Uuid,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HeartbeatResponse {
    /// False when the batch's cell no longer needs it (stopped early): release it.
    pub keep_going: bool,
    pub lease_secs: u64,
}

/// Compressed logs of a batch: base64 of gzip. The sha256 are of the uncompressed texts.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Logs {
    /// Every game's GCG, each introduced by a [`GAME_MARKER`] line.
    pub gcg_gz: String,
    pub gcg_sha256: String,
    /// The per-turn CSV (header included).
    pub csv_gz: String,
    pub csv_sha256: String,
}

/// Line that starts each game in a GCG bundle: `#lexhive-game <game id>`.
pub const GAME_MARKER: &str = "#lexhive-game ";

/// Split a GCG bundle into (game id, GCG text) pairs.
pub fn split_gcg_bundle(text: &str) -> Result<Vec<(u64, &str)>, String> {
    let mut out = Vec::new();
    let mut starts = Vec::new();
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        if let Some(id) = line.strip_prefix(GAME_MARKER) {
            let id = id.trim().parse::<u64>().map_err(|_| format!("bad game marker `{}`", line.trim()))?;
            starts.push((id, pos, pos + line.len()));
        } else if starts.is_empty() && !line.trim().is_empty() {
            return Err("text before the first game marker".into());
        }
        pos += line.len();
    }
    for (i, &(id, _, body)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(text.len(), |s| s.1);
        out.push((id, &text[body..end]));
    }
    Ok(out)
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResultUpload {
    pub lease_id: Uuid,
    pub result: JobResult,
    pub elapsed_ms: u64,
    pub logs: Logs,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UploadResponse {
    /// True when this upload was recorded now; false when the same lease's result already was.
    pub accepted: bool,
    pub message: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FailRequest {
    pub lease_id: Uuid,
    pub error: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReleaseRequest {
    pub lease_id: Uuid,
}

/// The body of every error response.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApiError {
    pub error: String,
}

/// Response to an experiment submission.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Submitted {
    pub id: Uuid,
    pub cells: u32,
    /// The experiment's size in `counted` (games or positions).
    pub games: u64,
    /// What `games` counts ([`JobKind::shown`]).
    #[serde(default = "games")]
    pub counted: String,
}

fn games() -> String {
    "games".into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::matches::MatchJob;

    #[test]
    fn bundle_round_trip() {
        let text = format!("{GAME_MARKER}4\n#player1 a a\n>a: X 8H AB +4 4\n{GAME_MARKER}5\n#player1 b b\n");
        let games = split_gcg_bundle(&text).unwrap();
        assert_eq!(games.len(), 2);
        assert_eq!(games[0], (4, "#player1 a a\n>a: X 8H AB +4 4\n"));
        assert_eq!(games[1], (5, "#player1 b b\n"));
        assert!(split_gcg_bundle("junk\n").is_err());
        assert!(split_gcg_bundle(&format!("{GAME_MARKER}x\n")).is_err());
    }

    #[test]
    fn claim_response_is_tagged() {
        let idle =
            serde_json::to_value(ClaimResponse::Idle { retry_after_ms: 5, unfinished: true, waiting_for_others: 0 })
                .unwrap();
        assert_eq!((idle["status"].as_str(), idle["unfinished"].as_bool()), (Some("idle"), Some(true)));
        // A coordinator of an earlier build says nothing of others' leases.
        let old: ClaimResponse = serde_json::from_str(r#"{"status": "idle", "retry_after_ms": 5}"#).unwrap();
        assert!(matches!(old, ClaimResponse::Idle { unfinished: false, .. }));
        let claim = ClaimRequest {
            protocol: 2,
            threads: 1,
            kinds: JobKind::names(&[JobKind::Match]),
            rates: [("endgame".to_string(), 0.5)].into(),
            capabilities: Capabilities { onnx: true, ..Default::default() },
        };
        let v = serde_json::to_value(&claim).unwrap();
        assert_eq!((v["kinds"][0].as_str(), v["rates"]["endgame"].as_f64()), (Some("match"), Some(0.5)));
        assert_eq!(claim.capabilities.names(), ["onnx"]);
        // A claim of a build without capabilities has none.
        let old: ClaimRequest = serde_json::from_str(r#"{"protocol": 2, "threads": 1, "kinds": ["match"]}"#).unwrap();
        assert_eq!(old.capabilities, Capabilities::default());
        // A kind added after this build is ignored, not an error.
        let names = ["wintable", "cnn", "match", "match"].map(String::from);
        assert_eq!(known_kinds(&names), [JobKind::Match, JobKind::Wintable]);
        let job = serde_json::to_value(Job::Match(MatchJob {
            bot1: "a".into(),
            bot2: "b".into(),
            seed: 1,
            first_pair: 0,
            pairs: 2,
        }))
        .unwrap();
        assert_eq!(job["kind"], "match");
    }
}
