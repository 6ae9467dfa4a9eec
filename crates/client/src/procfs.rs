//! Reading `/proc/<pid>/stat` (Linux): the node's process metrics and the load generator's CPU
//! accounting of the processes it launched read it the same way.

/// The fields of a `/proc/<pid>/stat` text after the command name (which may hold spaces and
/// parentheses: it ends at the last `)`). Index 0 is `state`, proc(5)'s field 3, so proc(5)'s
/// field `k` is index `k − 3`.
pub fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    Some(rest.split_whitespace().collect())
}

/// User + system CPU seconds in a `/proc/<pid>/stat` text (proc(5) fields 14 and 15), at
/// `ticks` clock ticks per second; `None` if it does not parse.
pub fn cpu_seconds(stat: &str, ticks: u64) -> Option<f64> {
    let f = stat_fields(stat)?;
    let used = f.get(11)?.parse::<u64>().ok()?.checked_add(f.get(12)?.parse::<u64>().ok()?)?;
    (ticks > 0).then(|| used as f64 / ticks as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        assert_eq!(stat_fields("42 (a (b) c) S 1 2 3").unwrap(), ["S", "1", "2", "3"]);
        assert_eq!(stat_fields("no parenthesis"), None);
        let stat = "7 (x) S 1 1 1 0 -1 0 0 0 0 0 250 50 0 0";
        assert_eq!(cpu_seconds(stat, 100), Some(3.0));
    }
}
