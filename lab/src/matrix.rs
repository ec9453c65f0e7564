//! The result of a lab run: scheme × property, each cell kept, broken (with the fault
//! that broke it and a one-line reason) or not run (and why).

use serde::Serialize;

use crate::scheme::Scheme;

/// The columns: the three properties a distributed lock needs (mutual exclusion, no
/// deadlock, fault tolerance), plus the two the better schemes add (owner checks, fencing
/// tokens).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Property {
    /// Never two holders at once while each is within its lease.
    MutualExclusion,
    /// A holder that dies does not keep the lock from everyone else for ever.
    NoDeadlock,
    /// A release never frees a lock someone else holds.
    NoForeignUnlock,
    /// Losing one node (a Redis restart without persistence, a failover to a replica that
    /// had not received the grant, a database server killed and restarted) neither hands
    /// the lock out twice nor stops the service.
    SurvivesNodeLoss,
    /// A holder paused past its lease has its late write rejected by a resource that
    /// checks fencing tokens.
    Fenced,
}

impl Property {
    /// The columns, in order.
    pub const ALL: [Property; 5] = [
        Property::MutualExclusion,
        Property::NoDeadlock,
        Property::NoForeignUnlock,
        Property::SurvivesNodeLoss,
        Property::Fenced,
    ];

    /// The column title.
    pub fn title(self) -> &'static str {
        match self {
            Property::MutualExclusion => "mutual exclusion",
            Property::NoDeadlock => "no deadlock after holder crash",
            Property::NoForeignUnlock => "no foreign unlock",
            Property::SurvivesNodeLoss => "survives one node loss",
            Property::Fenced => "fenced",
        }
    }
}

/// The fault that broke a property: what the tests assert besides ✓/✗.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Flaw {
    /// Contenders racing for a free lock were granted it more than once.
    RaceDoubleGrant,
    /// A client whose clock ran ahead took over a live lock.
    ClockJumpTakeover,
    /// The server's clock stepped forward: it expired a live lock, and another client was
    /// granted it (a SQLite file: a second process whose wall clock ran ahead).
    ServerClockStep,
    /// A holder's release after its lease ended deleted its successor's lock.
    LateReleaseFreedSuccessor,
    /// A holder delayed between its owner check and its delete deleted its successor's lock.
    CheckThenDeleteWindow,
    /// A retried (duplicate) release deleted the next holder's lock.
    RetriedReleaseFreedSuccessor,
    /// A crashed holder's lock never expires.
    NoExpiry,
    /// A holder crashed between two steps of its acquire and left a lock that never expires.
    CrashBetweenSteps,
    /// The server restarted without the hold (Redis without persistence; a database whose
    /// hold was a session) and granted the lock a second time.
    RestartForgotLock,
    /// A replica promoted before the grant reached it granted the lock a second time.
    PromotedReplicaForgotLock,
    /// With one node lost (of several, or the only one), nobody could acquire.
    UnavailableAfterNodeLoss,
    /// Grants carry no token: a resource cannot tell a stale holder's write.
    NoToken,
    /// A stale holder's write with its (older) token was accepted.
    StaleWriteAccepted,
}

/// One cell of the matrix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Cell {
    /// The property held under every fault that applies.
    Kept,
    /// A fault broke it.
    Broken {
        /// Which fault.
        flaw: Flaw,
        /// One line saying what happened.
        reason: String,
    },
    /// Not run (no server for it, or not in this build).
    NotRun {
        /// Why.
        reason: String,
    },
}

impl Cell {
    /// `✓`, `✗` or `–`.
    pub fn mark(&self) -> &'static str {
        match self {
            Cell::Kept => "✓",
            Cell::Broken { .. } => "✗",
            Cell::NotRun { .. } => "–",
        }
    }

    /// The flaw, for a broken cell.
    pub fn flaw(&self) -> Option<Flaw> {
        match self {
            Cell::Broken { flaw, .. } => Some(*flaw),
            _ => None,
        }
    }

    /// The reason line of a broken or skipped cell.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Cell::Kept => None,
            Cell::Broken { reason, .. } | Cell::NotRun { reason } => Some(reason),
        }
    }
}

/// One scheme's row.
#[derive(Clone, Debug)]
pub struct Row {
    /// The scheme.
    pub scheme: Scheme,
    /// One cell per property, in the order of [`Property::ALL`].
    pub cells: [Cell; 5],
}

impl Row {
    /// The cell of `property`.
    pub fn cell(&self, property: Property) -> &Cell {
        &self.cells[property as usize]
    }
}

/// `{"scheme": …, "summary": …, "cells": {"mutual_exclusion": {"result": …}, …}}`, columns in order.
impl Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeStruct};
        struct Cells<'a>(&'a Row);
        impl Serialize for Cells<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(Property::ALL.len()))?;
                for p in Property::ALL {
                    m.serialize_entry(&p, self.0.cell(p))?;
                }
                m.end()
            }
        }
        let mut st = s.serialize_struct("Row", 3)?;
        st.serialize_field("scheme", &self.scheme)?;
        st.serialize_field("summary", self.scheme.summary())?;
        st.serialize_field("cells", &Cells(self))?;
        st.end()
    }
}

/// Every row of one run, and where it ran.
#[derive(Clone, Debug, Serialize)]
pub struct Matrix {
    /// The server of the single-node faults (password hidden).
    pub server: String,
    /// The short ttl a paused or crashed holder had, in ms.
    pub ttl_ms: u64,
    /// The databases of the SQL rows run (the lab's own SQLite file, the PostgreSQL and
    /// MySQL servers named; passwords hidden).
    pub databases: Vec<String>,
    /// One row per scheme run.
    pub rows: Vec<Row>,
}

impl Matrix {
    /// The row of `scheme`, when it was run.
    pub fn row(&self, scheme: Scheme) -> Option<&Row> {
        self.rows.iter().find(|r| r.scheme == scheme)
    }

    /// The matrix as a Markdown table followed by one line per ✗ (and per –).
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("| scheme |");
        for p in Property::ALL {
            out.push_str(&format!(" {} |", p.title()));
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(Property::ALL.len()));
        out.push('\n');
        for r in &self.rows {
            out.push_str(&format!("| `{}` |", r.scheme));
            for p in Property::ALL {
                out.push_str(&format!(" {} |", r.cell(p).mark()));
            }
            out.push('\n');
        }
        out.push('\n');
        for line in self.reason_lines() {
            out.push_str(&format!("- {line}\n"));
        }
        out
    }

    /// One line per ✗ and – cell (`✗ setnx / no deadlock after holder crash: <reason>`);
    /// one line for a row not run at all (`– redlock: <reason>`).
    pub fn reason_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for r in &self.rows {
            let reasons: Vec<(Property, &Cell)> =
                Property::ALL.into_iter().map(|p| (p, r.cell(p))).filter(|(_, c)| c.reason().is_some()).collect();
            let skipped = |c: &Cell| matches!(c, Cell::NotRun { .. });
            let first = r.cells[0].reason();
            if r.cells.iter().all(|c| skipped(c) && c.reason() == first) {
                lines.push(format!("– {}: {}", r.scheme, first.unwrap_or_default()));
                continue;
            }
            for (p, c) in reasons {
                lines.push(format!("{} {} / {}: {}", c.mark(), r.scheme, p.title(), c.reason().unwrap_or_default()));
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix() -> Matrix {
        let broken = Cell::Broken { flaw: Flaw::NoExpiry, reason: "stuck".into() };
        let skipped = || Cell::NotRun { reason: "not here".into() };
        Matrix {
            server: "redis://x".into(),
            ttl_ms: 300,
            databases: Vec::new(),
            rows: vec![
                Row { scheme: Scheme::Setnx, cells: [Cell::Kept, broken, Cell::Kept, skipped(), Cell::Kept] },
                Row { scheme: Scheme::Redlock, cells: std::array::from_fn(|_| skipped()) },
            ],
        }
    }

    #[test]
    fn markdown_has_one_line_per_cross_and_one_per_row_not_run() {
        let md = matrix().to_markdown();
        assert!(md.starts_with("| scheme | mutual exclusion | no deadlock after holder crash |"), "{md}");
        assert!(md.contains("| `setnx` | ✓ | ✗ | ✓ | – | ✓ |\n"), "{md}");
        assert!(md.contains("- ✗ setnx / no deadlock after holder crash: stuck\n"), "{md}");
        assert!(md.contains("- – setnx / survives one node loss: not here\n"), "{md}");
        assert!(md.contains("- – redlock: not here\n"), "{md}");
        assert_eq!(md.matches("redlock").count(), 2, "{md}");
    }

    #[test]
    fn json_names_columns_in_order() {
        let v = serde_json::to_value(&matrix().rows[0]).unwrap();
        assert_eq!(v["scheme"], "setnx");
        assert_eq!(v["cells"]["no_deadlock"]["flaw"], "no_expiry");
        assert_eq!(v["cells"]["mutual_exclusion"]["result"], "kept");
        let text = serde_json::to_string(&matrix().rows[0]).unwrap();
        let at = |k: &str| text.find(k).unwrap();
        assert!(at("mutual_exclusion") < at("no_deadlock") && at("survives_node_loss") < at("fenced"), "{text}");
    }
}
