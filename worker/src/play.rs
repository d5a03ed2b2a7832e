//! Games between two bots on the current rayon pool, each deal seeded from the run's seed:
//! what `worker autoplay` and the volunteer's game-playing runners both play.

use crate::data::Data;
use anyhow::Result;
use engine::autoplay::play_leg;
use engine::bots::{BotSpec, Named, Player};
use engine::leaves::Klv;
use engine::movegen::Generator;
use engine::record::GameRecord;
use engine::winpct::WinTable;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

/// Leave tables that bots name for themselves (`static:leaves=..`), by the name they give: a
/// path for the local commands, an artifact's sha256 for a volunteer.
pub type Tables = HashMap<String, Arc<Klv>>;

/// The tables `specs` name, read from the paths they give.
pub fn read_tables(specs: &[BotSpec]) -> Result<Tables> {
    let mut out = Tables::new();
    for name in specs.iter().filter_map(BotSpec::own_leaves) {
        if !out.contains_key(name) {
            out.insert(name.to_string(), Arc::new(Klv::load(std::path::Path::new(name))?));
        }
    }
    Ok(out)
}

/// A match to play: two bots on shared data.
pub struct Match<'a> {
    pub data: &'a Data,
    pub specs: [BotSpec; 2],
    pub leaves: Option<Arc<Klv>>,
    /// The tables bots name for themselves, loaded.
    pub tables: Tables,
    /// Win-probability table, for simulating bots.
    pub table: Option<Arc<WinTable>>,
    pub seed: u64,
    /// Games `first_game..first_game + games` of the run: paired, game `2p + leg` is pair
    /// `p`'s leg; unpaired, game `i` is deal `i`, bot 0 first when `i` is even.
    pub first_game: u64,
    pub games: u64,
    pub paired: bool,
    /// Where CNN bots' nets run and come from; `None` refuses CNN bots.
    pub net: Option<crate::nets::Nets<'a>>,
}

impl Match<'_> {
    fn bots(&self) -> Result<[Box<dyn Player>; 2]> {
        let leaves =
            |name: &str| self.tables.get(name).cloned().ok_or_else(|| format!("no leave table {name} is loaded"));
        let refuse = |_: &str| Err("value nets are off here".to_string());
        let build = |spec: &BotSpec| match self.net {
            Some(net) => {
                let models = net.args.loader(&self.data.dist, net.models);
                let named = Named { models: &models, leaves: &leaves };
                spec.build_with(self.leaves.clone(), self.table.clone(), named)
            }
            None => {
                spec.build_with(self.leaves.clone(), self.table.clone(), Named { models: &refuse, leaves: &leaves })
            }
        };
        Ok([build(&self.specs[0])?, build(&self.specs[1])?])
    }

    /// Play all games on the current rayon pool; `each` sees every finished game, in no
    /// particular order.
    pub fn play(&self, each: &(dyn Fn(&GameRecord) -> Result<()> + Sync)) -> Result<()> {
        let ctx = self.data.ctx();
        // Building fails only for missing data; find out before the threads do.
        self.bots()?;
        (self.first_game..self.first_game + self.games).into_par_iter().try_for_each_init(
            || (self.bots().expect("built once above"), Generator::new()),
            |(bots, mg), i| {
                let (pair, leg) = if self.paired { (i / 2, (i % 2) as usize) } else { (i, (i % 2) as usize) };
                let mut rec = play_leg(ctx, bots, self.seed, pair, leg, mg);
                rec.id = i;
                each(&rec)
            },
        )
    }
}
