//! `list SUITE... [--filter F] [--partition KIND:K/N]`: the selected jobs, one
//! `suite::job  kind` line each.

use std::path::PathBuf;

use super::{load_all, no_job_selected};
use crate::model::exit::ExitCode;
use crate::suite;

/// Runs `list`.
pub fn command(
    paths: &[PathBuf],
    filter: Option<&str>,
    partition: Option<crate::shard::Partition>,
) -> i32 {
    match load_all(paths) {
        Ok(suites) => {
            let jobs: Vec<&suite::Job> = suites
                .iter()
                .flat_map(|s| s.jobs.iter())
                .filter(|j| filter.is_none_or(|f| suite::filter_matches(f, &j.id)))
                .collect();
            if jobs.is_empty() && filter.is_some() {
                // As `run`: a filter that selects nothing is a bad flag, not an empty list.
                return no_job_selected(filter);
            }
            let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
            // As `run --partition`: the partition applies to what the filter selected, and
            // may hold no job (that shard has nothing to do).
            let keep = partition.map_or_else(|| vec![true; ids.len()], |p| p.selects(&ids));
            for (j, k) in jobs.iter().zip(keep) {
                if k {
                    println!("{}  {}", j.id, j.kind_name().as_str());
                }
            }
            ExitCode::OK
        }
        Err(code) => code,
    }
}
