//! The time the load reads and sleeps on. [`SystemClock`] is tokio's monotonic clock;
//! [`VirtualClock`] is one that tests drive: sleeping on it moves it to the wake-up time at
//! once, so a 30 s schedule runs in microseconds and the same way every time.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

/// A monotonic clock: time since its origin.
pub trait Clock: Send + Sync {
    /// Time since the origin.
    fn now(&self) -> Duration;

    /// Resolves once `now() >= t`.
    fn sleep_until(&self, t: Duration) -> impl Future<Output = ()> + Send;

    /// Resolves once `d` has passed.
    fn sleep(&self, d: Duration) -> impl Future<Output = ()> + Send {
        self.sleep_until(self.now() + d)
    }
}

/// The system's monotonic clock (tokio's).
#[derive(Clone, Copy, Debug)]
pub struct SystemClock {
    origin: tokio::time::Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    pub fn start() -> SystemClock {
        SystemClock { origin: tokio::time::Instant::now() }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn sleep_until(&self, t: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep_until(self.origin + t)
    }
}

/// A clock that moves only when slept on (to the wake-up time) or advanced.
#[derive(Debug, Default)]
pub struct VirtualClock {
    now: Mutex<Duration>,
}

impl VirtualClock {
    /// A clock at zero.
    pub fn new() -> VirtualClock {
        VirtualClock::default()
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        *self.now.lock().unwrap_or_else(|e| e.into_inner()) += d;
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Duration {
        *self.now.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The clock moves when the sleep is first polled, not when it is made.
    async fn sleep_until(&self, t: Duration) {
        let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
        *now = (*now).max(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_virtual_clock_moves_only_forward_and_only_when_asked() {
        let c = VirtualClock::new();
        assert_eq!(c.now(), Duration::ZERO);
        futures::executor::block_on(c.sleep(Duration::from_millis(100)));
        assert_eq!(c.now(), Duration::from_millis(100));
        futures::executor::block_on(c.sleep_until(Duration::from_millis(50)));
        assert_eq!(c.now(), Duration::from_millis(100), "never backwards");
        c.advance(Duration::from_secs(1));
        assert_eq!(c.now(), Duration::from_millis(1100));
    }

    #[tokio::test]
    async fn the_system_clock_sleeps_until_its_deadline() {
        let c = SystemClock::start();
        c.sleep_until(Duration::from_millis(30)).await;
        assert!(c.now() >= Duration::from_millis(30));
    }
}
