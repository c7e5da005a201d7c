//! Progress display for apply and destroy: a spinner per running step on a terminal, plain
//! lines otherwise.

use crate::style::Style;
use engine::{Action, Address, Event, Observer};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

pub struct Progress {
    multi: MultiProgress,
    bars: Mutex<HashMap<Address, ProgressBar>>,
    interactive: bool,
    style: Style,
}

impl Progress {
    pub fn new() -> Self {
        let interactive = std::io::stderr().is_terminal();
        let target =
            if interactive { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        Progress {
            multi: MultiProgress::with_draw_target(target),
            bars: Mutex::new(HashMap::new()),
            interactive,
            style: Style::stderr(),
        }
    }

    fn line(&self, text: String) {
        if self.interactive {
            let _ = self.multi.println(text);
        } else {
            eprintln!("{text}");
        }
    }
}

fn verb(action: Action) -> (&'static str, &'static str) {
    match action {
        Action::Create => ("Creating", "Created"),
        Action::Update => ("Updating", "Updated"),
        Action::Delete => ("Destroying", "Destroyed"),
        Action::Replace => ("Replacing", "Replaced"),
        Action::Adopt => ("Adopting", "Adopted"),
        Action::Forget => ("Forgetting", "Forgot"),
        Action::NoOp => ("Reading", "Read"),
    }
}

impl Observer for Progress {
    fn event(&self, event: Event) {
        let mut bars = self.bars.lock().unwrap_or_else(|p| p.into_inner());
        match event {
            Event::RefreshStarted { count } => {
                if self.interactive {
                    let _ = self.multi.println(format!("Reading {count} resources..."));
                }
            }
            Event::StepStarted { address, action } => {
                let (doing, _) = verb(action);
                if self.interactive {
                    let bar = self.multi.add(ProgressBar::new_spinner());
                    bar.set_style(
                        ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    );
                    bar.set_message(format!("{doing} {address}"));
                    bar.enable_steady_tick(Duration::from_millis(120));
                    bars.insert(address, bar);
                } else {
                    eprintln!("{address}: {doing}...");
                }
            }
            Event::Waiting { address, message } => match bars.get(&address) {
                Some(bar) => bar.set_message(format!("{address}: {message}")),
                None => eprintln!("{address}: {message}"),
            },
            Event::Retrying { address, attempt, error } => {
                self.line(format!("{address}: retrying (attempt {attempt}): {error}"));
            }
            Event::StepFinished { address, action, elapsed, id } => {
                if let Some(bar) = bars.remove(&address) {
                    bar.finish_and_clear();
                    self.multi.remove(&bar);
                }
                let (_, done) = verb(action);
                let id = id.map(|i| format!(" [{i}]")).unwrap_or_default();
                drop(bars);
                self.line(format!(
                    "{} {address}: {done}{id} after {:.1}s",
                    self.style.green("✓"),
                    elapsed.as_secs_f64()
                ));
            }
            Event::StepFailed { address, error } => {
                if let Some(bar) = bars.remove(&address) {
                    bar.finish_and_clear();
                    self.multi.remove(&bar);
                }
                drop(bars);
                self.line(format!("{} {address}: {error}", self.style.red("✗")));
            }
        }
    }
}
