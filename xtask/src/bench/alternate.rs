//! Alternating measurements: on a shared machine one cold run and one floor can each be
//! slowed by 10-20 % by neighbours, so a single ratio says little. `--alternate N` runs
//! the libdeflate floor and a cold `package` N times more, one after the other, and
//! reports each pair's ratios and their median: a neighbour that slows both halves of a
//! pair leaves its ratio alone.
//!
//! Owns: the repeated pairs and their summary. Does not own: measuring one process
//! (`measure`) or one floor (`floor`).

use std::path::Path;
use std::process::Command;

use super::{floor, measure};

/// One floor and the cold run measured right after it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Pair {
    pub floor_wall_seconds: f64,
    pub floor_cpu_seconds: f64,
    pub package_wall_seconds: f64,
    pub package_cpu_seconds: f64,
    /// Package wall / floor wall.
    pub ratio: f64,
    /// Package CPU / floor CPU.
    pub cpu_ratio: f64,
}

/// The pairs, and the medians of their ratios.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Alternation {
    pub pairs: Vec<Pair>,
    pub median_ratio: f64,
    pub median_cpu_ratio: f64,
}

/// Measures `n` pairs; `command(dest)` is a cold `package` into the fresh directory
/// `dest`, which is removed after each run.
pub fn alternate(
    n: u32,
    artifacts: &Path,
    level: u32,
    run_dir: &Path,
    command: &dyn Fn(&Path) -> Command,
) -> anyhow::Result<Option<Alternation>> {
    let mut pairs = Vec::new();
    for k in 0..n {
        let floor = floor::measure_floor(artifacts, floor::Codec::Libdeflate { level })?;
        let dest = run_dir.join(format!("alternate-{k}"));
        let cost = measure::measure(command(&dest), run_dir, &run_dir.join(format!("alternate-{k}.log")))?;
        if dest.exists() {
            fs_err::remove_dir_all(&dest)?;
        }
        if let Some(error) = &cost.error {
            anyhow::bail!("package failed in alternating run {}:\n{error}", k + 1);
        }
        pairs.push(Pair {
            floor_wall_seconds: floor.wall_seconds,
            floor_cpu_seconds: floor.cpu_seconds,
            package_wall_seconds: cost.wall_seconds,
            package_cpu_seconds: cost.cpu_seconds(),
            ratio: cost.wall_seconds / floor.wall_seconds.max(1e-9),
            cpu_ratio: cost.cpu_seconds() / floor.cpu_seconds.max(1e-9),
        });
    }
    if pairs.is_empty() {
        return Ok(None);
    }
    let median_ratio = median(pairs.iter().map(|pair| pair.ratio).collect());
    let median_cpu_ratio = median(pairs.iter().map(|pair| pair.cpu_ratio).collect());
    Ok(Some(Alternation { pairs, median_ratio, median_cpu_ratio }))
}

/// The middle value (the mean of the two middle ones for an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    match values.len() % 2 {
        1 => values[mid],
        _ => (values[mid - 1] + values[mid]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![1.5]), 1.5);
    }
}
