//! Results on disk: `<experiment>.csv` (merged across builds), and sections appended to
//! `report.md`.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::Path;

use crate::LabError;

/// Rows of one experiment, with named columns. Every value is kept as text, as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, each with one value per column.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these columns.
    pub fn new(columns: &[&str]) -> Table {
        Table { columns: columns.iter().map(|c| c.to_string()).collect(), rows: Vec::new() }
    }

    /// Appends a row (its length must match the columns).
    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
    }

    /// Index of a column.
    pub fn col(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The distinct values of a column, sorted.
    pub fn distinct(&self, column: &str) -> Vec<String> {
        let Some(c) = self.col(column) else { return Vec::new() };
        let mut v: Vec<String> = self.rows.iter().map(|r| r[c].clone()).collect();
        v.sort();
        v.dedup();
        v
    }

    /// Rows whose `column` equals `value`.
    pub fn select<'a>(&'a self, column: &str, value: &'a str) -> impl Iterator<Item = &'a Vec<String>> + 'a {
        let c = self.col(column);
        self.rows.iter().filter(move |r| c.is_some_and(|c| r[c] == value))
    }

    /// A numeric cell.
    pub fn num(&self, row: &[String], column: &str) -> Option<f64> {
        row.get(self.col(column)?)?.parse().ok()
    }

    /// CSV text (values never contain commas or quotes here).
    pub fn to_csv(&self) -> String {
        let mut s = self.columns.join(",");
        s.push('\n');
        for r in &self.rows {
            s.push_str(&r.join(","));
            s.push('\n');
        }
        s
    }

    /// Parses CSV written by [`Table::to_csv`].
    pub fn from_csv(text: &str) -> Option<Table> {
        let mut lines = text.lines();
        let columns: Vec<String> = lines.next()?.split(',').map(str::to_string).collect();
        let mut rows = Vec::new();
        for l in lines.filter(|l| !l.is_empty()) {
            let row: Vec<String> = l.split(',').map(str::to_string).collect();
            if row.len() != columns.len() {
                return None;
            }
            rows.push(row);
        }
        Some(Table { columns, rows })
    }

    /// Writes `path`, keeping the rows of an existing file with the same columns whose `build`
    /// differs from this run's (so a portable and a native run share one CSV and one plot).
    /// Returns the merged table.
    pub fn write_merged(&self, path: &Path, build: &str) -> Result<Table, LabError> {
        let mut merged = self.clone();
        if let Some(old) = fs::read_to_string(path).ok().and_then(|t| Table::from_csv(&t)) {
            if old.columns == self.columns {
                if let Some(b) = old.col("build") {
                    let kept: Vec<Vec<String>> = old.rows.into_iter().filter(|r| r[b] != build).collect();
                    merged.rows.splice(0..0, kept);
                }
            }
        }
        fs::write(path, merged.to_csv()).map_err(|e| LabError::io(path, e))?;
        Ok(merged)
    }

    /// A Markdown table of the chosen columns.
    pub fn markdown(&self, columns: &[&str]) -> String {
        let idx: Vec<usize> = columns.iter().filter_map(|c| self.col(c)).collect();
        let mut s = format!("| {} |\n", columns.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(columns.len()));
        for r in &self.rows {
            let cells: Vec<&str> = idx.iter().map(|&i| r[i].as_str()).collect();
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
        s
    }
}

/// Appends `section` to `DIR/report.md` (creating it with a title).
pub fn append_report(dir: &Path, section: &str) -> Result<(), LabError> {
    let path = dir.join("report.md");
    let new = !path.exists();
    let mut f =
        fs::OpenOptions::new().create(true).append(true).open(&path).map_err(|e| LabError::io(&path, e))?;
    let mut text = String::new();
    if new {
        text.push_str(
            "# ScaleChain study report\n\nEach section was appended by one run of `scalechain study`.\n\n",
        );
    }
    text.push_str(section);
    text.push('\n');
    f.write_all(text.as_bytes()).map_err(|e| LabError::io(&path, e))
}

/// Formats a number with 4 significant digits (plain notation).
pub fn sig4(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = 3 - x.abs().log10().floor() as i32;
    format!("{:.*}", digits.max(0) as usize, x)
}

/// A target a measured figure is held to, as a report states it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// The figure must not exceed this.
    AtMost(f64),
    /// The figure must reach this.
    AtLeast(f64),
}

impl Target {
    /// Does `value` meet the target? A value that is not a number does not.
    pub fn met(&self, value: f64) -> bool {
        match *self {
            Target::AtMost(t) => value <= t,
            Target::AtLeast(t) => value >= t,
        }
    }

    /// The target as the report's headers write it: `≤ 1.15`, `≥ 0.8`.
    pub fn text(&self) -> String {
        match *self {
            Target::AtMost(t) => format!("≤ {t}"),
            Target::AtLeast(t) => format!("≥ {t}"),
        }
    }

    /// A table cell: the value as `formatted`, then whether it met the target (`met`, or
    /// `**missed**` in bold so that a reader's eye finds it).
    pub fn cell(&self, formatted: &str, value: f64) -> String {
        if self.met(value) {
            format!("{formatted} (met)")
        } else {
            format!("{formatted} (**missed**)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_marks_each_figure_met_or_missed() {
        let at_most = Target::AtMost(1.15);
        assert_eq!(at_most.text(), "≤ 1.15");
        assert_eq!(at_most.cell("1.113", 1.113), "1.113 (met)");
        assert_eq!(at_most.cell("1.159", 1.159), "1.159 (**missed**)");
        assert!(at_most.met(1.15), "the bound itself meets it");
        let at_least = Target::AtLeast(0.8);
        assert_eq!(at_least.text(), "≥ 0.8");
        assert!(at_least.met(0.8) && !at_least.met(0.301));
        assert!(!at_least.met(f64::NAN) && !at_most.met(f64::NAN), "no number meets no target");
    }

    #[test]
    fn merged_csv_keeps_other_builds_and_replaces_this_one() {
        let dir = std::env::temp_dir().join(format!("study-out-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.csv");
        let mut a = Table::new(&["n", "build", "v"]);
        a.push(vec!["1".into(), "portable".into(), "10".into()]);
        a.write_merged(&path, "portable").unwrap();
        let mut b = Table::new(&["n", "build", "v"]);
        b.push(vec!["1".into(), "native".into(), "7".into()]);
        let m = b.write_merged(&path, "native").unwrap();
        assert_eq!(m.rows.len(), 2);
        let mut a2 = Table::new(&["n", "build", "v"]);
        a2.push(vec!["1".into(), "portable".into(), "11".into()]);
        let m = a2.write_merged(&path, "portable").unwrap();
        assert_eq!(m.rows.len(), 2);
        assert_eq!(m.select("build", "portable").count(), 1);
        assert_eq!(m.distinct("build"), vec!["native".to_string(), "portable".to_string()]);
        assert!(m.distinct("nope").is_empty());
        let back = Table::from_csv(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.num(&back.rows[1], "v"), Some(11.0));
        append_report(&dir, "## a\n").unwrap();
        append_report(&dir, "## b\n").unwrap();
        let r = fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(r.starts_with("# ScaleChain study report") && r.contains("## a\n") && r.contains("## b\n"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn four_significant_digits() {
        assert_eq!(sig4(12345.6), "12346");
        assert_eq!(sig4(1.23456), "1.235");
        assert_eq!(sig4(0.00123456), "0.001235");
    }
}
