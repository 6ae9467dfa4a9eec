//! Child processes: signals, bounded waits, logs.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

/// A signal the launcher sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sig {
    /// SIGINT (what Ctrl-C sends).
    Int,
    /// SIGTERM: stop cleanly.
    Term,
    /// SIGKILL: stop now.
    Kill,
    /// SIGSTOP: freeze the process where it is (its sockets stay open; the kernel still
    /// acknowledges what arrives).
    Pause,
    /// SIGCONT: let a frozen process run again.
    Resume,
}

impl Sig {
    fn signal(self) -> Signal {
        match self {
            Sig::Int => Signal::INT,
            Sig::Term => Signal::TERM,
            Sig::Kill => Signal::KILL,
            Sig::Pause => Signal::STOP,
            Sig::Resume => Signal::CONT,
        }
    }
}

/// Sends `sig` to process `pid`.
pub fn signal_pid(pid: u32, sig: Sig) -> std::io::Result<()> {
    let raw = i32::try_from(pid).map_err(|_| std::io::Error::other(format!("pid {pid} out of range")))?;
    let pid = Pid::from_raw(raw).ok_or_else(|| std::io::Error::other("pid 0 names no single process"))?;
    kill_process(pid, sig.signal()).map_err(std::io::Error::from)
}

/// How often waits look again.
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// How a process ended when it was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped {
    /// Its exit status.
    pub status: ExitStatus,
    /// It did not end within the time-out after SIGTERM and was killed.
    pub killed: bool,
}

/// Stops `children` together: SIGTERM to each still running, a wait of at most `timeout` for
/// all, then SIGKILL to the rest (and a wait for them). Children that already exited (e.g.
/// after the terminal's own SIGINT) are only reaped. Returns one result per child, in order.
pub(crate) fn stop_all(children: &mut [&mut Child], timeout: Duration) -> Vec<std::io::Result<Stopped>> {
    let mut done: Vec<Option<std::io::Result<Stopped>>> = children.iter().map(|_| None).collect();
    for (c, d) in children.iter_mut().zip(done.iter_mut()) {
        match c.try_wait() {
            Ok(Some(status)) => *d = Some(Ok(Stopped { status, killed: false })),
            Ok(None) => {
                // A process that ended between the two calls is a zombie still: no error.
                let _ = signal_pid(c.id(), Sig::Term);
            }
            Err(e) => *d = Some(Err(e)),
        }
    }
    let deadline = Instant::now() + timeout;
    loop {
        let mut pending = false;
        for (c, d) in children.iter_mut().zip(done.iter_mut()) {
            if d.is_some() {
                continue;
            }
            match c.try_wait() {
                Ok(Some(status)) => *d = Some(Ok(Stopped { status, killed: false })),
                Ok(None) => pending = true,
                Err(e) => *d = Some(Err(e)),
            }
        }
        if !pending || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(POLL);
    }
    for (c, d) in children.iter_mut().zip(done.iter_mut()) {
        if d.is_none() {
            let _ = c.kill();
            *d = Some(c.wait().map(|status| Stopped { status, killed: true }));
        }
    }
    done.into_iter().map(|d| d.unwrap_or_else(|| Err(std::io::Error::other("not stopped")))).collect()
}

/// The last `lines` lines of the file at `path` (at most its last 16 KiB), or a note saying
/// why there is none.
pub fn tail(path: &Path, lines: usize) -> String {
    const MAX: u64 = 16 << 10;
    let read = || -> std::io::Result<String> {
        let mut f = File::open(path)?;
        let len = f.metadata()?.len();
        f.seek(SeekFrom::Start(len.saturating_sub(MAX)))?;
        let mut buf = Vec::with_capacity(MAX as usize);
        f.take(MAX).read_to_end(&mut buf)?;
        let text = String::from_utf8_lossy(&buf).into_owned();
        let all: Vec<&str> = text.lines().collect();
        // The first line may be cut when the file was longer than the window.
        let skip_first = len > MAX && all.len() > 1;
        let from = all.len().saturating_sub(lines).max(usize::from(skip_first));
        Ok(all[from.min(all.len())..].join("\n"))
    };
    match read() {
        Ok(t) if t.trim().is_empty() => "(the log is empty)".into(),
        Ok(t) => t,
        Err(e) => format!("(no log: {e})"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn tails_keep_the_last_lines_of_long_logs() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        std::fs::write(&p, "a\nb\nc\n").unwrap();
        assert_eq!(tail(&p, 2), "b\nc");
        assert_eq!(tail(&p, 10), "a\nb\nc");
        let long: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, long).unwrap();
        assert_eq!(tail(&p, 2), "line 9998\nline 9999");
        let t = tail(&p, 100_000);
        assert!(t.starts_with("line ") && t.ends_with("line 9999"), "no cut line: {}", &t[..20]);
        std::fs::write(&p, "").unwrap();
        assert_eq!(tail(&p, 3), "(the log is empty)");
        assert!(tail(&dir.path().join("none"), 3).starts_with("(no log: "));
    }

    /// The state letter of `/proc/<pid>/stat` (`T` when stopped by a signal).
    fn state(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat.rsplit_once(") ").unwrap().1.chars().next().unwrap()
    }

    #[test]
    fn a_paused_process_is_frozen_until_resumed() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        signal_pid(pid, Sig::Pause).unwrap();
        let frozen = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            state(pid) == 'T'
        });
        assert!(frozen, "sleep was not stopped: {}", state(pid));
        signal_pid(pid, Sig::Resume).unwrap();
        let running = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            state(pid) != 'T'
        });
        assert!(running, "sleep was not resumed");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn stopping_escalates_to_sigkill_and_reaps_the_exited() {
        let mut stubborn = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; while :; do sleep 0.05; done"])
            .spawn()
            .unwrap();
        let mut polite = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let t = Instant::now();
        let r = stop_all(&mut [&mut stubborn, &mut polite, &mut gone], Duration::from_millis(500));
        let r: Vec<Stopped> = r.into_iter().map(Result::unwrap).collect();
        assert!(r[0].killed, "ignored SIGTERM, so killed");
        assert!(!r[1].killed && !r[1].status.success(), "ended by SIGTERM");
        assert!(!r[2].killed && r[2].status.success(), "had exited already");
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn signals_to_no_process_are_errors() {
        assert!(signal_pid(0, Sig::Term).is_err());
        assert!(signal_pid(u32::MAX, Sig::Term).is_err());
    }
}
