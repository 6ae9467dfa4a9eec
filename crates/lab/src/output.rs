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

/// The title `DIR/report.md` starts with.
pub const REPORT_TITLE: &str = "# ScaleChain study report\n\nOne section per experiment, each from its latest run into \
    this directory (a later run of an experiment replaces its section); each section's machine table says where, \
    with which build and at which commit it ran.\n\n";

/// Writes `section`, whose first line is its `## ` header, into `DIR/report.md` (creating it
/// with [`REPORT_TITLE`]): in place of the section with the same header if there is one (up to
/// the next `## ` header), else at the end. So a report holds each experiment once.
pub fn write_report_section(dir: &Path, section: &str) -> Result<(), LabError> {
    let path = dir.join("report.md");
    let old = match fs::read_to_string(&path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => REPORT_TITLE.to_string(),
        Err(e) => return Err(LabError::io(&path, e)),
    };
    let text = replace_section(&old, section);
    let mut f = fs::File::create(&path).map_err(|e| LabError::io(&path, e))?;
    f.write_all(text.as_bytes()).map_err(|e| LabError::io(&path, e))
}

/// `report` with `section` in place of the section under the same `## ` header, or appended.
fn replace_section(report: &str, section: &str) -> String {
    let header = section.lines().next().unwrap_or_default();
    let mut section = section.trim_end().to_string();
    section.push_str("\n\n");
    let starts: Vec<usize> = report.match_indices("\n## ").map(|(i, _)| i + 1).collect();
    for (k, &at) in starts.iter().enumerate() {
        if report[at..].lines().next() == Some(header) {
            let end = starts.get(k + 1).copied().unwrap_or(report.len());
            return format!("{}{section}{}", &report[..at], &report[end..]);
        }
    }
    let mut out = report.to_string();
    if !out.ends_with("\n\n") {
        out.push('\n');
    }
    out.push_str(&section);
    out
}

/// Markdown tables of `text` longer than `max_rows` rows, replaced by a line that says where
/// their rows are (`csv`): a report shows what a reader reads, the CSV holds the rest.
pub fn fold_long_tables(text: &str, max_rows: usize, csv: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].starts_with('|') {
            let start = i;
            while i < lines.len() && lines[i].starts_with('|') {
                i += 1;
            }
            // A header line and its separator, then the rows.
            let rows = (i - start).saturating_sub(2);
            if rows > max_rows {
                let _ = writeln!(out, "(A table of {rows} rows: in [`{csv}`]({csv}).)");
            } else {
                for l in &lines[start..i] {
                    out.push_str(l);
                    out.push('\n');
                }
            }
        } else {
            out.push_str(lines[i]);
            out.push('\n');
            i += 1;
        }
    }
    out
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
    fn a_section_replaces_its_earlier_run_and_others_stay() {
        let r = replace_section(REPORT_TITLE, "## `a`\n\nfirst a\n");
        let r = replace_section(&r, "## `b`\n\nfirst b\n");
        let r = replace_section(&r, "## `a`\n\nsecond a\n");
        assert_eq!(r.matches("## `a`").count(), 1, "{r}");
        assert!(r.contains("second a") && !r.contains("first a") && r.contains("first b"), "{r}");
        assert!(r.find("## `a`") < r.find("## `b`"), "it keeps its place: {r}");
        // A quick run is another section.
        let r = replace_section(&r, "## `a` (quick)\n\nquick a\n");
        assert!(r.contains("second a") && r.contains("quick a"), "{r}");
        assert!(r.starts_with(REPORT_TITLE));
    }

    #[test]
    fn long_tables_fold_into_a_pointer_to_the_csv() {
        let mut text = String::from("intro\n\n| a |\n|---|\n");
        for i in 0..5 {
            text.push_str(&format!("| {i} |\n"));
        }
        text.push_str("\nafter\n");
        assert_eq!(fold_long_tables(&text, 5, "x.csv"), text, "five rows stay");
        let folded = fold_long_tables(&text, 4, "x.csv");
        assert!(folded.contains("(A table of 5 rows: in [`x.csv`](x.csv).)"), "{folded}");
        assert!(!folded.contains("| 3 |") && folded.contains("intro") && folded.contains("after"));
    }

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
        write_report_section(&dir, "## a\n\none\n").unwrap();
        write_report_section(&dir, "## b\n").unwrap();
        write_report_section(&dir, "## a\n\ntwo\n").unwrap();
        let r = fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(r.starts_with("# ScaleChain study report") && r.contains("## a\n") && r.contains("## b\n"));
        assert!(r.contains("two") && !r.contains("one"), "{r}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn four_significant_digits() {
        assert_eq!(sig4(12345.6), "12346");
        assert_eq!(sig4(1.23456), "1.235");
        assert_eq!(sig4(0.00123456), "0.001235");
    }
}
