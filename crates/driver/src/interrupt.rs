//! Cancellation of a run: what Ctrl-C and SIGTERM mean ([`install_signal_handler`]), the
//! run's cancellation flag ([`cancel`], [`wait_flag`]) and sleeping unless cancelled. The
//! run, the executors and the load driver all read it; it reads none of them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::events;

/// What Ctrl-C and SIGTERM mean for a run ([`install_signal_handler`]): the first sets
/// [`Interrupts::cancelled`] (no new work starts; what exists is finalized), the second
/// aborts ([`Interrupts::aborted`]): the caller stops waiting for the run and decides the
/// exit (the binary exits [`ExitCode::INTERRUPTED`](crate::model::exit::ExitCode::INTERRUPTED)).
#[derive(Debug, Clone)]
pub struct Interrupts {
    /// Set by the first signal: the run's cancellation flag.
    pub cancelled: Arc<AtomicBool>,
    abort: Arc<tokio::sync::Notify>,
}

impl Interrupts {
    /// Resolves when a second signal has arrived (at once if one already has).
    pub async fn aborted(&self) {
        self.abort.notified().await;
    }
}

/// Installs Ctrl-C and SIGTERM handlers: the first signal sets the returned
/// [`Interrupts::cancelled`] and emits [`events::RunEvent::Interrupted`] to `events`; a
/// second one resolves [`Interrupts::aborted`].
pub fn install_signal_handler(events: events::EventSink) -> Interrupts {
    let interrupts = Interrupts {
        cancelled: Arc::new(AtomicBool::new(false)),
        abort: Arc::new(tokio::sync::Notify::new()),
    };
    let i = interrupts.clone();
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(t) => t,
                Err(_) => return,
            };
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            if i.cancelled.swap(true, Ordering::SeqCst) {
                // A permit is stored if nobody waits yet: `aborted` then resolves at once.
                i.abort.notify_one();
                continue;
            }
            CANCELLED.notify_waiters();
            events.emit(events::RunEvent::Interrupted);
        }
    });
    interrupts
}

/// Sleep helper used by drivers that honour cancellation while waiting.
pub async fn sleep_unless_cancelled(d: Duration, cancelled: &AtomicBool) {
    let step = Duration::from_millis(20);
    let mut left = d;
    while !left.is_zero() && !cancelled.load(Ordering::Relaxed) {
        let s = left.min(step);
        tokio::time::sleep(s).await;
        left -= s;
    }
}

/// Woken when a cancellation flag is set through [`cancel`] (the signal handler does).
static CANCELLED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// How often [`wait_flag`] looks at a flag set without [`cancel`] (a caller's own
/// `store(true)`): the notification is the way, this only bounds the delay.
const FLAG_FALLBACK: Duration = Duration::from_secs(1);

/// Sets a run's cancellation flag and wakes every [`wait_flag`] at once.
pub fn cancel(flag: &AtomicBool) {
    flag.store(true, Ordering::SeqCst);
    CANCELLED.notify_waiters();
}

/// Resolves once `flag` is set (the run's cancellation flag); raced against a request or
/// a sleep so that cancellation ends it early (the sequential path and the load executor
/// both race it). It waits on [`cancel`]'s notification, with a 1 s fallback look at the
/// flag; it used to poll every 25 ms, one timer wake-up per request in flight every
/// 25 ms: 40 wake-ups a second per stream, a third of a paced stream's.
pub(crate) async fn wait_flag(flag: &AtomicBool) {
    loop {
        if flag.load(Ordering::SeqCst) {
            return;
        }
        let notified = CANCELLED.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if flag.load(Ordering::SeqCst) {
            return;
        }
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep(FLAG_FALLBACK) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    /// Records the events it receives.
    struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl super::events::Reporter for Recorder {
        fn on_event(&mut self, event: &super::events::RunEvent) {
            self.0.lock().unwrap().push(format!("{event:?}"));
        }
    }

    /// Waits, up to 10 s, until `what` holds.
    async fn until(what: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !what() {
            assert!(std::time::Instant::now() < deadline, "timed out");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The first SIGINT cancels and says so as an event; the second aborts, which the
    /// caller sees through `aborted` (the driver itself never exits the process). Each
    /// nextest test is a process of its own: the signals reach only this test.
    #[tokio::test]
    async fn a_first_signal_cancels_and_a_second_aborts() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = super::events::EventSink::new(vec![Box::new(Recorder(seen.clone()))]);
        let interrupts = super::install_signal_handler(sink);
        let raise = || {
            // SAFETY: signalling this process, whose SIGINT the handler above consumes.
            assert_eq!(unsafe { libc::kill(libc::getpid(), libc::SIGINT) }, 0);
        };
        // The handler task (on this test's one thread) installs its handlers as soon as
        // this task first waits.
        tokio::time::sleep(Duration::from_millis(200)).await;
        raise();
        until(|| interrupts.cancelled.load(Ordering::SeqCst)).await;
        until(|| !seen.lock().unwrap().is_empty()).await;
        assert_eq!(*seen.lock().unwrap(), ["Interrupted"]);
        let aborted = tokio::time::timeout(Duration::from_millis(200), interrupts.aborted()).await;
        assert!(aborted.is_err(), "one signal does not abort");
        raise();
        tokio::time::timeout(Duration::from_secs(10), interrupts.aborted())
            .await
            .expect("the second signal aborts");
        assert_eq!(seen.lock().unwrap().len(), 1, "the abort is no event");
    }
}
