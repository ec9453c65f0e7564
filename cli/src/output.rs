//! Human and JSON output: tables, durations, the waiting spinner.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::exit::{Failure, IOERR};

/// `eprintln!` that never panics: an error writing stderr (a closed pipe: EPIPE, a full
/// disk) is ignored, so that baton's exit code, or its command's, still comes through.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::write_line(false, format_args!($($arg)*))
    };
}
pub(crate) use say;

/// `println!` that never panics (see [`say!`]).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_line(true, format_args!($($arg)*))
    };
}
pub(crate) use out;

/// One line on stdout (`stdout`) or stderr; errors are ignored (see [`say!`]).
pub(crate) fn write_line(stdout: bool, args: std::fmt::Arguments<'_>) {
    fn put(mut w: impl Write, args: std::fmt::Arguments<'_>) {
        let _ = w.write_fmt(args);
        let _ = w.write_all(b"\n");
        let _ = w.flush();
    }
    if stdout { put(std::io::stdout().lock(), args) } else { put(std::io::stderr().lock(), args) }
}

/// `print!` of a whole text on stdout that never panics (see [`say!`]).
pub(crate) fn print(text: &str) {
    let mut w = std::io::stdout().lock();
    let _ = w.write_all(text.as_bytes());
    let _ = w.flush();
}

/// Whether stderr is a terminal (progress and notices go there only when a human watches).
pub(crate) fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json<T: Serialize>(value: &T) -> Result<(), Failure> {
    let text =
        serde_json::to_string_pretty(value).map_err(|e| Failure::new(IOERR, format!("cannot encode JSON: {e}")))?;
    out!("{text}");
    Ok(())
}

/// A short human duration: `850ns`, `12.3µs`, `4.56ms`, `1.23s`, `2m05s`.
pub(crate) fn human(d: Duration) -> String {
    let ns = d.as_nanos();
    match ns {
        0..1_000 => format!("{ns}ns"),
        1_000..1_000_000 => format!("{:.1}µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2}ms", ns as f64 / 1e6),
        _ if d < Duration::from_secs(60) => format!("{:.2}s", d.as_secs_f64()),
        _ => format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60),
    }
}

/// Milliseconds as a float with µs precision, for JSON.
pub(crate) fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// A plain text table: left-aligned columns, two spaces apart, indented.
pub(crate) struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new<const N: usize>(header: [&str; N]) -> Table {
        Table { rows: vec![header.iter().map(|h| (*h).to_owned()).collect()] }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(crate) fn render(&self, indent: &str) -> String {
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let width: Vec<usize> = (0..cols)
            .map(|c| self.rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::from(indent);
            for (c, cell) in row.iter().enumerate() {
                line.push_str(cell);
                if c + 1 < row.len() {
                    line.extend(std::iter::repeat_n(' ', width[c] - cell.chars().count() + 2));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Redraws "⠋ waiting for lock NAME… 3.2s" on stderr until dropped (the future never
/// completes; race it against the acquire). Call [`clear_line`] afterwards.
pub(crate) async fn spinner(name: &str, since: Instant) {
    const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    // The first frame comes late enough that a lock granted at once draws nothing.
    let first = tokio::time::Instant::now() + Duration::from_millis(200);
    let mut tick = tokio::time::interval_at(first, Duration::from_millis(100));
    for frame in FRAMES.iter().cycle() {
        tick.tick().await;
        let mut err = std::io::stderr().lock();
        // Errors writing progress are not worth failing the command for.
        let _ = write!(err, "\r\x1b[2K{frame} waiting for lock {name}… {:.1}s", since.elapsed().as_secs_f64());
        let _ = err.flush();
    }
}

/// Erases the spinner's line.
pub(crate) fn clear_line() {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K");
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_tables() {
        assert_eq!(human(Duration::from_nanos(850)), "850ns");
        assert_eq!(human(Duration::from_nanos(12_345)), "12.3µs");
        assert_eq!(human(Duration::from_micros(4_560)), "4.56ms");
        assert_eq!(human(Duration::from_millis(1_234)), "1.23s");
        assert_eq!(human(Duration::from_secs(125)), "2m05s");
        let mut t = Table::new(["a", "bb"]);
        t.row(vec!["ccc".into(), "d".into()]);
        assert_eq!(t.render(""), "a    bb\nccc  d\n");
    }
}
