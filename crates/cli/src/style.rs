//! Colours: on when the stream is a terminal and NO_COLOR is not set.

use owo_colors::OwoColorize;
use std::io::IsTerminal;

#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
}

impl Style {
    pub fn stdout() -> Self {
        Style { color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() }
    }

    pub fn stderr() -> Self {
        Style { color: std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() }
    }

    pub fn green(&self, s: &str) -> String {
        if self.color { s.green().to_string() } else { s.to_string() }
    }

    pub fn yellow(&self, s: &str) -> String {
        if self.color { s.yellow().to_string() } else { s.to_string() }
    }

    pub fn red(&self, s: &str) -> String {
        if self.color { s.red().to_string() } else { s.to_string() }
    }

    pub fn bold(&self, s: &str) -> String {
        if self.color { s.bold().to_string() } else { s.to_string() }
    }

    pub fn dim(&self, s: &str) -> String {
        if self.color { s.dimmed().to_string() } else { s.to_string() }
    }
}
