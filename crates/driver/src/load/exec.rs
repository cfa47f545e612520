//! The load executor: closed and open loops over units of work.
//!
//! Scheduling logic only. What a unit does is a [`UnitRunner`] (in the product, one
//! agentic trajectory or one context request; in tests, a mock); time is a [`Timer`] (the
//! run clock in the product, tokio's paused logical clock in tests). The executor polls
//! the runners' futures concurrently on the calling task (`FuturesUnordered`), so nothing
//! needs `'static`; a runner may hand the work to its own task (the product's does, so
//! units in flight run in parallel on the runtime's workers).
//!
//! - **Closed loop** (`arrivals = None`): `concurrency` units start at once; whenever one
//!   ends, the next starts. Each unit's scheduled time is the instant its slot freed (the
//!   point start for the first ones).
//! - **Open loop** (`arrivals = Some(offsets)`): unit `i` is *scheduled* at
//!   `start + offsets[i]` and starts then, unless `concurrency` units are already in flight;
//!   it then waits in the client and starts when a slot frees, keeping its scheduled time.
//!   The runner receives the scheduled time and records it on the unit's first request,
//!   beside the actual send time (field case C24, coordinated omission).
//! - Stop: every offset (open loop), `Count(n)` units, or no unit starting at or after
//!   `start + d` for `Duration(d)` (closed loop). In-flight units always finish.
//! - Cancellation: once the flag is set no unit starts; units in flight finish on their
//!   own (the runner honours cancellation inside a unit).

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use super::spec::Stop;

/// A source of time in ns on one clock, and a way to wait for an instant on it.
pub trait Timer: Sync {
    /// Now, ns from the clock's origin.
    fn now_ns(&self) -> u64;
    /// Completes at `t_ns` (at once when it is past). An implementation may complete
    /// early (e.g. on cancellation); the executor re-checks the time.
    fn sleep_until(&self, t_ns: u64) -> impl Future<Output = ()> + Send;
}

/// Identifies one unit: its start order and its scheduled start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitTicket {
    /// 0-based unit number in the point (arrival order in an open loop, start order in a
    /// closed loop).
    pub index: u64,
    /// When the unit was due to start, ns on the timer's clock.
    pub scheduled_ns: u64,
}

/// Runs one unit of work.
pub trait UnitRunner: Sync {
    /// What a unit produces (never an error: failures are part of the output).
    type Output: Send;
    /// Runs the unit of `ticket`; its first request is scheduled at `ticket.scheduled_ns`.
    fn run(&self, ticket: UnitTicket) -> impl Future<Output = Self::Output> + Send;
    /// Whether the point keeps this finished unit's entry in [`PointRun::units`]; a runner
    /// whose units hand their results on as they end keeps only the ones it still needs, so
    /// a point of a million units holds no entry per unit. Default: every one.
    fn keeps(&self, _output: &Self::Output) -> bool {
        true
    }
}

/// What one point executes.
#[derive(Debug, Clone, PartialEq)]
pub struct PointPlan {
    /// Units in flight at most; `None` = uncapped (open loop only; a closed loop without a
    /// cap runs one unit at a time).
    pub concurrency: Option<u32>,
    /// Open-loop arrival offsets, ns from the point start (non-decreasing); `None` for a
    /// closed loop.
    pub arrivals: Option<Vec<u64>>,
    /// Closed-loop stop rule (an open loop runs every arrival).
    pub stop: Stop,
}

/// One finished unit.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitDone<O> {
    /// The unit's ticket.
    pub ticket: UnitTicket,
    /// When the executor started it, ns (≥ `ticket.scheduled_ns` in an open loop).
    pub started_ns: u64,
    /// When it ended, ns.
    pub ended_ns: u64,
    /// The runner's output.
    pub output: O,
}

/// The result of one point.
#[derive(Debug, Clone, PartialEq)]
pub struct PointRun<O> {
    /// Point start, ns (the origin of the arrival offsets).
    pub start_ns: u64,
    /// When the last unit ended, ns.
    pub end_ns: u64,
    /// Finished units the runner keeps ([`UnitRunner::keeps`]), in ticket order.
    pub units: Vec<UnitDone<O>>,
    /// Units that finished, kept or not.
    pub finished: u64,
    /// The most units that were in flight at once (achieved concurrency).
    pub max_in_flight: u32,
    /// Units of the point's plan never started because of cancellation: scheduled
    /// arrivals not yet started (open loop), and in a closed loop of `Count(n)` every unit
    /// of the `n` not yet started, queued or not.
    pub not_started: u64,
    /// Cancellation stopped the point before its stop rule did (also a closed loop of
    /// `Duration(d)`, whose units not started cannot be counted).
    pub stopped_early: bool,
}

/// Whether a closed loop started at `t0` still has units to start: fewer than its count
/// have started, or its duration has not run out.
fn closed_more(stop: Stop, t0: u64, started: u64, now: u64) -> bool {
    match stop {
        Stop::Count(n) => started < n,
        Stop::Duration(d) => now < t0.saturating_add(d),
    }
}

/// Which of a point's units wait to start, have started, or never will: the executor's
/// bookkeeping between its wake-ups.
struct Admission {
    /// Point start, ns (the origin of the arrival offsets).
    t0: u64,
    /// Units due, not yet started (waiting for a free slot).
    queue: VecDeque<UnitTicket>,
    /// Units started.
    started: u64,
    /// The next open-loop arrival not yet queued.
    next_arrival: usize,
    /// Units that will never start because of cancellation.
    not_started: u64,
    /// Cancellation stopped the point before its stop rule did.
    stopped_early: bool,
}

impl Admission {
    /// Queues the units due at `now`: the open loop's arrivals whose time has come (the
    /// rest count as not started once `stop_now`), or closed-loop units while the point
    /// has slots (`cap` less the `running` ones) and units left.
    fn admit(&mut self, plan: &PointPlan, cap: usize, running: usize, now: u64, stop_now: bool) {
        let t0 = self.t0;
        match &plan.arrivals {
            Some(offsets) => {
                while self.next_arrival < offsets.len()
                    && t0.saturating_add(offsets[self.next_arrival]) <= now
                {
                    self.queue.push_back(UnitTicket {
                        index: self.next_arrival as u64,
                        scheduled_ns: t0.saturating_add(offsets[self.next_arrival]),
                    });
                    self.next_arrival += 1;
                }
                if stop_now {
                    self.not_started += (offsets.len() - self.next_arrival) as u64;
                    self.next_arrival = offsets.len();
                }
            }
            None => {
                while !stop_now
                    && running + self.queue.len() < cap
                    && closed_more(plan.stop, t0, self.started + self.queue.len() as u64, now)
                {
                    self.queue.push_back(UnitTicket {
                        index: self.started + self.queue.len() as u64,
                        scheduled_ns: now,
                    });
                }
            }
        }
    }

    /// Cancellation was seen at `now`: counts what the plan still held (until a count
    /// finds the point stopped early) and drops the queued units as not started.
    fn cancel(&mut self, plan: &PointPlan, now: u64) {
        if !self.stopped_early {
            let (unqueued, early) = match (&plan.arrivals, plan.stop) {
                (Some(_), _) => (0, self.not_started > 0 || !self.queue.is_empty()),
                (None, Stop::Count(n)) => {
                    let left = n.saturating_sub(self.started + self.queue.len() as u64);
                    (left, left > 0 || !self.queue.is_empty())
                }
                (None, Stop::Duration(_)) => {
                    (0, closed_more(plan.stop, self.t0, self.started, now))
                }
            };
            self.not_started += unqueued;
            self.stopped_early = early;
        }
        self.not_started += self.queue.len() as u64;
        self.queue.clear();
    }
}

/// Runs one point: see the module docs.
pub async fn run_point<R: UnitRunner, T: Timer>(
    plan: &PointPlan,
    runner: &R,
    timer: &T,
    cancelled: &AtomicBool,
) -> PointRun<R::Output> {
    let t0 = timer.now_ns();
    let cap = match (&plan.arrivals, plan.concurrency) {
        (_, Some(c)) => c.max(1) as usize,
        (Some(_), None) => usize::MAX,
        (None, None) => 1,
    };
    let mut a = Admission {
        t0,
        queue: VecDeque::new(),
        started: 0,
        next_arrival: 0,
        not_started: 0,
        stopped_early: false,
    };
    let mut running = FuturesUnordered::new();
    let mut done: Vec<UnitDone<R::Output>> = Vec::new();
    let mut max_in_flight = 0usize;
    let mut finished = 0u64;
    let mut last_end = t0;
    loop {
        let now = timer.now_ns();
        let stop_now = cancelled.load(Ordering::Relaxed);
        a.admit(plan, cap, running.len(), now, stop_now);
        if stop_now {
            a.cancel(plan, now);
        }
        while running.len() < cap {
            let Some(ticket) = a.queue.pop_front() else {
                break;
            };
            a.started += 1;
            running.push(async move {
                let started_ns = timer.now_ns();
                let output = runner.run(ticket).await;
                UnitDone {
                    ticket,
                    started_ns,
                    ended_ns: timer.now_ns(),
                    output,
                }
            });
            max_in_flight = max_in_flight.max(running.len());
        }
        let next_due = plan
            .arrivals
            .as_ref()
            .and_then(|o| o.get(a.next_arrival))
            .map(|o| t0.saturating_add(*o));
        if running.is_empty() && a.queue.is_empty() && next_due.is_none() {
            let more =
                plan.arrivals.is_none() && !stop_now && closed_more(plan.stop, t0, a.started, now);
            if !more {
                break;
            }
            continue;
        }
        let due = next_due.unwrap_or(u64::MAX);
        tokio::select! {
            biased;
            Some(d) = running.next(), if !running.is_empty() => {
                finished += 1;
                last_end = last_end.max(d.ended_ns);
                if runner.keeps(&d.output) {
                    done.push(d);
                }
            }
            _ = timer.sleep_until(due), if next_due.is_some() => {}
        }
    }
    done.sort_by_key(|d| d.ticket.index);
    PointRun {
        start_ns: t0,
        end_ns: last_end,
        units: done,
        finished,
        max_in_flight: u32::try_from(max_in_flight).unwrap_or(u32::MAX),
        not_started: a.not_started,
        stopped_early: a.stopped_early,
    }
}

pub use crate::client::{InFlight, InFlightGuard};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::arrival::arrival_offsets_ns;
    use crate::load::spec::Arrival;
    use crate::stats::{AggregateParams, JobStats, RequestFigures};
    use std::time::Duration;
    use tokio::time::Instant;

    const MS: u64 = 1_000_000;

    /// Tokio's clock, paused in these tests: logical time that advances only when every
    /// task waits.
    struct Logical(Instant);

    impl Timer for Logical {
        fn now_ns(&self) -> u64 {
            Instant::now().duration_since(self.0).as_nanos() as u64
        }
        fn sleep_until(&self, t_ns: u64) -> impl Future<Output = ()> + Send {
            tokio::time::sleep_until(self.0 + Duration::from_nanos(t_ns))
        }
    }

    /// One mock request: scheduled, written, completed (logical ns).
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Req {
        scheduled: u64,
        send: u64,
        end: u64,
    }

    /// A mock server: every request completes `service` after it is written; the client
    /// writes after a per-unit stall (`stall[i]`, default 0).
    struct Mock<'a> {
        timer: &'a Logical,
        service: u64,
        stall: Vec<u64>,
        in_flight: InFlight,
    }

    impl UnitRunner for Mock<'_> {
        type Output = Req;
        async fn run(&self, t: UnitTicket) -> Req {
            let _g = self.in_flight.enter();
            let stall = self.stall.get(t.index as usize).copied().unwrap_or(0);
            tokio::time::sleep(Duration::from_nanos(stall)).await;
            let send = self.timer.now_ns();
            tokio::time::sleep(Duration::from_nanos(self.service)).await;
            Req {
                scheduled: t.scheduled_ns,
                send,
                end: self.timer.now_ns(),
            }
        }
    }

    fn mock<'a>(timer: &'a Logical, service_ms: u64, stall_ms: &[u64]) -> Mock<'a> {
        Mock {
            timer,
            service: service_ms * MS,
            stall: stall_ms.iter().map(|s| s * MS).collect(),
            in_flight: InFlight::default(),
        }
    }

    fn figures(reqs: &[Req]) -> Vec<RequestFigures> {
        reqs.iter()
            .map(|r| RequestFigures {
                ok: true,
                e2e_ms: Some((r.end - r.send) as f64 / 1e6),
                schedule_lag_ms: Some((r.send - r.scheduled) as f64 / 1e6),
                ..Default::default()
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn c24_scheduled_time_survives_a_client_stall() {
        // C24: intended sends at 0..400 ms; a client stall makes requests 4 and 5 write
        // at 450 and 455 ms; every response completes 200 ms after its write.
        let timer = Logical(Instant::now());
        let m = mock(&timer, 200, &[0, 0, 0, 150, 55]);
        let plan = PointPlan {
            concurrency: None,
            arrivals: Some(arrival_offsets_ns(
                Arrival::Constant,
                10.0,
                0,
                Stop::Count(5),
            )),
            stop: Stop::Count(5),
        };
        let run = run_point(&plan, &m, &timer, &AtomicBool::new(false)).await;
        let reqs: Vec<Req> = run.units.iter().map(|u| u.output).collect();
        let sends: Vec<u64> = reqs.iter().map(|r| r.send / MS).collect();
        assert_eq!(sends, vec![0, 100, 200, 450, 455]);
        let s = JobStats::aggregate(&figures(&reqs), AggregateParams::new(run.end_ns));
        let lags: Vec<u64> = reqs.iter().map(|r| (r.send - r.scheduled) / MS).collect();
        assert_eq!(lags, vec![0, 0, 0, 150, 55]);
        assert_eq!(s.schedule_misses, Some(2));
        assert_eq!(s.schedule_lag_ms.as_ref().unwrap().max, 150.0);
        let e2e = s.e2e_ms.unwrap();
        assert_eq!((e2e.min, e2e.max), (200.0, 200.0), "service latency 200 ms");
        let sched = s.e2e_from_schedule_ms.unwrap();
        assert!((sched.mean - 241.0).abs() < 1e-9, "{}", sched.mean);
        assert_eq!(sched.max, 350.0);
    }

    #[tokio::test(start_paused = true)]
    async fn open_loop_faster_than_service_queues_in_the_client_and_shows_it() {
        // Arrivals every 100 ms, one slot, 150 ms per request: each request waits 50 ms
        // longer than the one before; latency from send stays 150 ms.
        let timer = Logical(Instant::now());
        let m = mock(&timer, 150, &[]);
        let plan = PointPlan {
            concurrency: Some(1),
            arrivals: Some(arrival_offsets_ns(
                Arrival::Constant,
                10.0,
                0,
                Stop::Count(5),
            )),
            stop: Stop::Count(5),
        };
        let run = run_point(&plan, &m, &timer, &AtomicBool::new(false)).await;
        let reqs: Vec<Req> = run.units.iter().map(|u| u.output).collect();
        let lag: Vec<u64> = reqs.iter().map(|r| (r.send - r.scheduled) / MS).collect();
        assert_eq!(lag, vec![0, 50, 100, 150, 200]);
        let from_send: Vec<u64> = reqs.iter().map(|r| (r.end - r.send) / MS).collect();
        assert_eq!(from_send, vec![150; 5]);
        let from_sched: Vec<u64> = reqs.iter().map(|r| (r.end - r.scheduled) / MS).collect();
        assert_eq!(from_sched, vec![150, 200, 250, 300, 350]);
        assert_eq!(run.max_in_flight, 1);
        assert_eq!(m.in_flight.max(), 1);
        assert_eq!(run.end_ns, 750 * MS);
    }

    /// A runner that keeps only some finished units: the point holds just those entries,
    /// still counts every finished unit and ends at the last one's end.
    #[tokio::test(start_paused = true)]
    async fn a_point_holds_only_the_units_its_runner_keeps() {
        struct EvenOnly<'a>(Mock<'a>);
        impl UnitRunner for EvenOnly<'_> {
            type Output = (u64, Req);
            async fn run(&self, t: UnitTicket) -> (u64, Req) {
                (t.index, self.0.run(t).await)
            }
            fn keeps(&self, output: &(u64, Req)) -> bool {
                output.0.is_multiple_of(2)
            }
        }
        let timer = Logical(Instant::now());
        let r = EvenOnly(mock(&timer, 100, &[]));
        let plan = PointPlan {
            concurrency: Some(4),
            arrivals: None,
            stop: Stop::Count(10),
        };
        let run = run_point(&plan, &r, &timer, &AtomicBool::new(false)).await;
        assert_eq!(run.finished, 10);
        let idx: Vec<u64> = run.units.iter().map(|u| u.ticket.index).collect();
        assert_eq!(idx, vec![0, 2, 4, 6, 8]);
        // Units 8 and 9 end last (300 ms); 9 is not kept but still ends the point.
        assert_eq!(run.end_ns, 300 * MS);
        assert_eq!(run.max_in_flight, 4);
    }

    #[tokio::test(start_paused = true)]
    async fn closed_loop_keeps_n_in_flight_and_refills_on_completion() {
        let timer = Logical(Instant::now());
        let m = mock(&timer, 100, &[]);
        let plan = PointPlan {
            concurrency: Some(4),
            arrivals: None,
            stop: Stop::Count(10),
        };
        let run = run_point(&plan, &m, &timer, &AtomicBool::new(false)).await;
        assert_eq!(run.units.len(), 10);
        assert_eq!(run.max_in_flight, 4);
        assert_eq!(m.in_flight.max(), 4);
        let starts: Vec<u64> = run.units.iter().map(|u| u.started_ns / MS).collect();
        assert_eq!(starts, vec![0, 0, 0, 0, 100, 100, 100, 100, 200, 200]);
        // Closed loop: scheduled when the slot freed, so no schedule lag.
        assert!(
            run.units
                .iter()
                .all(|u| u.output.send == u.ticket.scheduled_ns)
        );
        assert_eq!(run.end_ns, 300 * MS);
        let idx: Vec<u64> = run.units.iter().map(|u| u.ticket.index).collect();
        assert_eq!(idx, (0..10).collect::<Vec<_>>());
    }

    #[tokio::test(start_paused = true)]
    async fn closed_loop_duration_starts_nothing_after_the_end() {
        let timer = Logical(Instant::now());
        let m = mock(&timer, 100, &[]);
        let plan = PointPlan {
            concurrency: Some(2),
            arrivals: None,
            stop: Stop::Duration(250 * MS),
        };
        let run = run_point(&plan, &m, &timer, &AtomicBool::new(false)).await;
        // Starts at 0, 0, 100, 100, 200, 200; none at 300.
        assert_eq!(run.units.len(), 6);
        assert!(run.units.iter().all(|u| u.started_ns < 250 * MS));
        assert_eq!(run.end_ns, 300 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn uncapped_open_loop_reaches_the_overlap_the_schedule_implies() {
        let timer = Logical(Instant::now());
        let m = mock(&timer, 1000, &[]);
        let plan = PointPlan {
            concurrency: None,
            arrivals: Some(arrival_offsets_ns(
                Arrival::Constant,
                10.0,
                0,
                Stop::Count(20),
            )),
            stop: Stop::Count(20),
        };
        let run = run_point(&plan, &m, &timer, &AtomicBool::new(false)).await;
        assert_eq!(run.max_in_flight, 10, "1 s service at 10/s: 10 overlap");
        assert!(
            run.units
                .iter()
                .all(|u| u.started_ns == u.ticket.scheduled_ns)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn cancellation_starts_nothing_more() {
        let timer = Logical(Instant::now());
        let m = mock(&timer, 100, &[]);
        let flag = AtomicBool::new(true);
        let plan = PointPlan {
            concurrency: Some(2),
            arrivals: Some(vec![0, 10, 20]),
            stop: Stop::Count(3),
        };
        let run = run_point(&plan, &m, &timer, &flag).await;
        assert!(run.units.is_empty());
        assert_eq!(run.not_started, 3);
        let closed = PointPlan {
            arrivals: None,
            ..plan
        };
        let run = run_point(&closed, &m, &timer, &flag).await;
        assert!(run.units.is_empty());
    }

    /// Cancels the run (sets the flag) when unit `at` starts; every unit then runs on.
    struct CancelAt<'a> {
        inner: Mock<'a>,
        at: u64,
        flag: &'a AtomicBool,
    }

    impl UnitRunner for CancelAt<'_> {
        type Output = Req;
        async fn run(&self, t: UnitTicket) -> Req {
            if t.index == self.at {
                self.flag.store(true, Ordering::Relaxed);
            }
            self.inner.run(t).await
        }
    }

    /// Ctrl-C during a one-point closed loop of `count = 16` after 4
    /// units started: the 12 units of the count never queued are not started, and the
    /// point did not run to its end (on main: `not_started` 0, so the job passed).
    #[tokio::test(start_paused = true)]
    async fn cancelled_closed_count_counts_every_unit_never_started() {
        for (conc, at, started) in [(1u32, 3u64, 4u64), (1, 0, 1), (2, 5, 6), (4, 3, 4)] {
            let timer = Logical(Instant::now());
            let flag = AtomicBool::new(false);
            let r = CancelAt {
                inner: mock(&timer, 100, &[]),
                at,
                flag: &flag,
            };
            let plan = PointPlan {
                concurrency: Some(conc),
                arrivals: None,
                stop: Stop::Count(16),
            };
            let run = run_point(&plan, &r, &timer, &flag).await;
            assert_eq!(run.finished, started, "c={conc} at={at}");
            assert_eq!(run.not_started, 16 - started, "c={conc} at={at}");
            assert!(run.stopped_early);
        }
    }

    /// A closed loop of `Duration(d)` cancelled before `d` stopped early; one that ran
    /// its whole plan (cancelled after the last unit started) did not.
    #[tokio::test(start_paused = true)]
    async fn cancelled_closed_duration_stops_early_and_a_whole_plan_does_not() {
        let timer = Logical(Instant::now());
        let flag = AtomicBool::new(false);
        let r = CancelAt {
            inner: mock(&timer, 100, &[]),
            at: 1,
            flag: &flag,
        };
        let plan = PointPlan {
            concurrency: Some(1),
            arrivals: None,
            stop: Stop::Duration(10_000 * MS),
        };
        let run = run_point(&plan, &r, &timer, &flag).await;
        assert_eq!(run.finished, 2);
        assert!(run.stopped_early);
        // The last unit of the count starts, then the flag is set: nothing was left out.
        let timer = Logical(Instant::now());
        let flag = AtomicBool::new(false);
        let r = CancelAt {
            inner: mock(&timer, 100, &[]),
            at: 3,
            flag: &flag,
        };
        let plan = PointPlan {
            concurrency: Some(1),
            arrivals: None,
            stop: Stop::Count(4),
        };
        let run = run_point(&plan, &r, &timer, &flag).await;
        assert_eq!((run.finished, run.not_started), (4, 0));
        assert!(!run.stopped_early);
    }
}
