//! What a load run records (executed points) and what it reports (`jobs[].load`,
//! `jobs[].sweep` in report.json).

use std::ops::Range;

use super::spec::{LoadPoint, LoadSpec, Sweep};
use inferscope_report::curve::PointSummary;

/// One executed point of a load job.
#[derive(Debug, Clone, PartialEq)]
pub struct PointRecord {
    /// The point's settings.
    pub point: LoadPoint,
    /// Point start, ns from the reference instant.
    pub start_ns: u64,
    /// When its last unit ended, ns.
    pub end_ns: u64,
    /// Its trajectories: indices into the job's trajectory list.
    pub trajectories: Range<usize>,
    /// Units started.
    pub units_started: u64,
    /// Units of the plan never started because of cancellation (closed loop: every unit
    /// of `count` not started; open loop: the arrivals not started).
    pub not_started: u64,
    /// Cancellation stopped the point before its stop rule did.
    pub stopped_early: bool,
    /// Units of `count` the open-loop schedule could not place (a rate so low that the
    /// next arrival lies past the run clock's range, or past the arrival bound): the
    /// point cannot run its count.
    pub unscheduled: u64,
    /// Most units in flight at once (achieved concurrency).
    pub max_units_in_flight: u32,
    /// Most requests in flight at once.
    pub max_requests_in_flight: u32,
    /// The warm pool before the window and the connections opened inside it;
    /// `None` for a point that ran nothing.
    pub connections: Option<crate::model::load::PointConnections>,
}

impl PointRecord {
    /// [`LoadRun::connect_notes`] of this point.
    fn connect_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let Some(c) = self.connections else {
            return notes;
        };
        if c.warm_retransmits > 0 {
            notes.push(format!(
                "connections: {}: {} of the {} connections the warm pool opened before \
                 the window took 0.9 s or more (a dropped SYN retransmitted after 1 s: \
                 the server's listen backlog overflowed while the pool opened); no \
                 request waited on them",
                self.point.label(),
                c.warm_retransmits,
                c.warm_opened,
            ));
        }
        if c.connect_retransmits > 0 {
            notes.push(format!(
                "connections: {}: {} of the {} connections opened inside the window \
                 took 0.9 s or more (a dropped SYN retransmitted after 1 s: the \
                 server's listen backlog overflowed); their requests carry \
                 connect_retransmit and the connect in connect_ns, inside their TTFT",
                self.point.label(),
                c.connect_retransmits,
                c.opened_in_window,
            ));
        }
        notes
    }

    /// Whether cancellation left the point's plan whole (every unit of it started).
    pub fn ran_to_end(&self) -> bool {
        self.not_started == 0 && !self.stopped_early
    }

    /// The point window, ns.
    pub fn window_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// The point's measured window, ns: from its first measured (not warm-up) request's
    /// send, `measured_start_ns`, to its end; the whole window without one. Rates are over
    /// it: the time warm-up requests ran alone holds no measured token (a closed loop of
    /// one unit in flight spends its first units' whole duration on warm-up).
    pub fn measured_window_ns(&self, measured_start_ns: Option<u64>) -> u64 {
        let start = measured_start_ns.map_or(self.start_ns, |m| m.max(self.start_ns));
        self.end_ns.saturating_sub(start)
    }

    /// The concurrency to declare to the step-attribution join (docs/measurement.md) for this point: the most units that
    /// could have been in flight, i.e. the configured cap limited to the units started (a
    /// point that started one unit never had four in flight, whatever its `concurrency`),
    /// or the measured maximum for an uncapped open loop; never below the measured one,
    /// never below 1.
    pub fn declared_concurrency(&self) -> u32 {
        let started = u32::try_from(self.units_started).unwrap_or(u32::MAX);
        self.point
            .concurrency
            .map_or(0, |c| c.min(started))
            .max(self.max_units_in_flight)
            .max(1)
    }

    /// A note when a closed loop's achieved concurrency fell short of the configured one
    /// although enough units were started to reach it (the executor starts them together,
    /// so only a stall in the client can cause it). An open loop's cap is a ceiling, not a
    /// target: the arrival rate decides how many overlap.
    pub fn shortfall_note(&self) -> Option<String> {
        let c = self.point.concurrency?;
        let closed = self.point.rate.is_none();
        (closed && self.units_started >= u64::from(c) && self.max_units_in_flight < c).then(|| {
            format!(
                "warning: {}: achieved concurrency {} < configured {c}",
                self.point.label(),
                self.max_units_in_flight
            )
        })
    }
}

/// The executed load of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadRun {
    /// The job's load settings.
    pub spec: LoadSpec,
    /// `trajectory` (agentic) or `request` (context).
    pub unit: &'static str,
    /// The client's idle-pool size for this suite (never a cap on concurrency).
    pub client_max_connections: usize,
    /// Executed points, in order.
    pub points: Vec<PointRecord>,
    /// `--shard K/N`: this shard's share of each point (empty unsharded).
    pub shares: Vec<crate::model::shard::PointShare>,
}

pub use crate::model::load::{LoadReport, SweepReport};

/// `jobs[].load` of `run` with the given warm-up request ids.
pub fn load_report(run: &LoadRun, warmup_requests: Vec<String>) -> LoadReport {
    let s = &run.spec;
    LoadReport {
        settings: s.describe(),
        unit: run.unit.to_string(),
        concurrency: s.concurrency,
        rate: s.rate,
        arrival: s.is_open().then_some(s.arrival),
        stop: s.stop,
        warmup: s.warmup,
        client_max_connections: run.client_max_connections as u64,
        points_planned: s.sweep.as_ref().map_or(1, |w| w.values().len() as u64),
        points_run: run.points.len() as u64,
        warmup_requests,
    }
}

/// `jobs[].sweep`: the curve of `spec` with its point summaries.
pub fn sweep_report(spec: &LoadSpec, points: Vec<PointSummary>) -> SweepReport {
    SweepReport {
        variable: spec.sweep.as_ref().map(|s| s.variable().to_string()),
        values: spec.sweep.as_ref().map_or_else(Vec::new, Sweep::values),
        points,
    }
}

impl LoadRun {
    /// Whether every planned point ran and every scheduled unit of each started (false
    /// after Ctrl-C / SIGTERM stopped the job part-way).
    pub fn complete(&self) -> bool {
        let planned = self.spec.sweep.as_ref().map_or(1, |w| w.values().len());
        self.points.len() == planned && self.points.iter().all(PointRecord::ran_to_end)
    }

    /// The notes of the points whose connects met a dropped SYN: inside the window (the
    /// retransmit second sits in those requests' TTFT) or in the warm-up before it (in
    /// no figure, but the server's listen backlog overflowed), so the job says so.
    pub fn connect_notes(&self) -> Vec<String> {
        self.points
            .iter()
            .flat_map(PointRecord::connect_notes)
            .collect()
    }

    /// One note per point whose schedule could not place its count;
    /// such a job fails.
    pub fn schedule_notes(&self) -> Vec<String> {
        self.points
            .iter()
            .filter(|p| p.unscheduled > 0)
            .map(|p| {
                let placed = match p.point.stop {
                    super::spec::Stop::Count(n) => n.saturating_sub(p.unscheduled),
                    super::spec::Stop::Duration(_) => 0,
                };
                format!(
                    "schedule: {} places {placed} of its count of {} units (the next \
                     arrival lies past the run clock's range or the arrival bound of {}); \
                     {} units were never scheduled",
                    p.point.label(),
                    placed + p.unscheduled,
                    super::arrival::MAX_ARRIVALS,
                    p.unscheduled
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::spec::{Arrival, Stop};

    fn point(concurrency: Option<u32>, units_started: u64, achieved: u32) -> PointRecord {
        PointRecord {
            point: LoadPoint {
                index: 0,
                concurrency,
                rate: None,
                arrival: Arrival::Poisson,
                stop: Stop::Count(units_started),
                warmup: 0,
            },
            start_ns: 0,
            end_ns: 1,
            trajectories: 0..0,
            units_started,
            not_started: 0,
            stopped_early: false,
            unscheduled: 0,
            max_units_in_flight: achieved,
            max_requests_in_flight: achieved,
            connections: None,
        }
    }

    /// A dropped SYN in the warm-up and one inside the window each get their note; a
    /// point without either gets none.
    #[test]
    fn a_retransmitted_connect_is_noted_where_it_happened() {
        let conns = crate::model::load::PointConnections {
            warm_wanted: Some(8),
            warm_opened: 8,
            warm_failed: 0,
            warm_ns: 1_050_000_000,
            warm_retransmits: 3,
            opened_in_window: 2,
            connect_retransmits: 0,
        };
        let mut p = point(Some(8), 8, 8);
        assert!(p.connect_notes().is_empty(), "no connections recorded");
        p.connections = Some(conns);
        let notes = p.connect_notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("3 of the 8 connections the warm pool opened before the window"),
            "{notes:?}"
        );
        p.connections = Some(crate::model::load::PointConnections {
            connect_retransmits: 1,
            ..conns
        });
        let notes = p.connect_notes();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[1].contains("1 of the 2 connections opened inside the window"),
            "{notes:?}"
        );
        p.connections = Some(crate::model::load::PointConnections {
            warm_retransmits: 0,
            ..conns
        });
        assert!(p.connect_notes().is_empty());
    }

    /// At most min(concurrency, units started) can be in flight: `concurrency = 4` with
    /// `count = 1` declares one, not four (the concurrency statement of docs/measurement.md stays true).
    #[test]
    fn declared_concurrency_is_capped_by_units_started() {
        assert_eq!(point(Some(4), 1, 1).declared_concurrency(), 1);
        assert_eq!(point(Some(4_000_000_000), 1, 1).declared_concurrency(), 1);
        assert_eq!(point(Some(4), 3, 1).declared_concurrency(), 3);
        assert_eq!(point(Some(4), 8, 1).declared_concurrency(), 4);
        assert_eq!(point(Some(4), 8, 4).declared_concurrency(), 4);
        // Uncapped open loop: the measured maximum; never below 1.
        assert_eq!(point(None, 8, 5).declared_concurrency(), 5);
        assert_eq!(point(Some(4), 0, 0).declared_concurrency(), 1);
        // Never below what was measured.
        assert_eq!(point(Some(2), 8, 3).declared_concurrency(), 3);
    }
}
