//! Progress reporting of long runs: a spinner on standard error that names the current
//! stage (set-up, assembly, Krylov iteration, Newton step). It is hidden when standard
//! error is not a terminal or when the caller asks for quiet output (`--json`, tests).

use indicatif::{ProgressBar, ProgressStyle};
use std::borrow::Cow;
use std::io::IsTerminal;
use std::time::Duration;

/// A progress display (possibly hidden); cheap to update from a solver loop.
#[derive(Clone, Debug)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A display that shows nothing (for tests and machine-readable output).
    pub fn hidden() -> Progress {
        Progress {
            bar: ProgressBar::hidden(),
        }
    }

    /// A spinner on standard error, or a hidden display when `quiet` is set or standard
    /// error is not a terminal.
    pub fn stderr(quiet: bool) -> Progress {
        if quiet || !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        let bar = ProgressBar::new_spinner();
        let style = ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress { bar }
    }

    /// Shows what is being done now.
    pub fn stage(&self, message: impl Into<Cow<'static, str>>) {
        self.bar.set_message(message);
    }

    /// Removes the display (before printing the summary).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// True when nothing is shown (so callers can skip formatting messages).
    pub fn is_hidden(&self) -> bool {
        self.bar.is_hidden()
    }
}

/// A progress bar over the steps of a time loop, with the ETA and the current energy, on
/// standard error; hidden when `quiet` or when standard error is not a terminal.
#[derive(Clone, Debug)]
pub struct StepProgress {
    bar: ProgressBar,
}

impl StepProgress {
    /// A bar of `steps` steps.
    pub fn stderr(quiet: bool, steps: usize) -> StepProgress {
        if quiet || !std::io::stderr().is_terminal() {
            return StepProgress {
                bar: ProgressBar::hidden(),
            };
        }
        let bar = ProgressBar::new(steps as u64);
        let style = ProgressStyle::with_template(
            "[{elapsed_precise}] {bar:30} {pos}/{len} steps, ETA {eta} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        StepProgress { bar }
    }

    /// Steps done, the time reached and the energy.
    pub fn update(&self, step: usize, time: f64, energy: f64) {
        self.bar.set_position(step as u64);
        if !self.bar.is_hidden() {
            self.bar
                .set_message(format!("t = {time:.4e} s, energy {energy:.4e}"));
        }
    }

    /// Removes the bar (before printing the summary).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
