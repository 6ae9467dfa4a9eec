//! The network model: where nodes are, how long a message takes between two of them, and how
//! fast each node sends and receives.
//!
//! A [`NetModel`] places nodes in [`Region`]s (by a share each, [`NetModel::place`]), gives
//! every pair of regions a mean one-way latency with a [`Jitter`] drawn per message, every
//! region an upload and a download bandwidth, and gossip a loss rate. The world
//! (`crate::world`) turns it into arrival times: a message leaves when its sender's uplink is
//! free (the uplink carries its messages one after another, in the order they were sent) and
//! takes `size / upload` to leave — or, with [`Uplink::Fair`], the uplink is shared equally
//! among the peers the sender has messages queued for, or, with [`Uplink::Tcp`], as TCP sockets
//! carry it (`crate::uplink`); it travels the latency; it has arrived once its last byte
//! left and travelled, and no sooner than `size / download` after its first byte came (the
//! slower link sets the pace). Downlinks do not queue: as in SimBlock, a message's transfer
//! is bounded by the receiver's bandwidth but not by the other messages arriving at it.
//!
//! Bounds, so that no sum on the virtual clock can overflow: latencies and jitter at most an
//! hour (a Pareto draw is cut there), bandwidth 0 (unlimited) or from 1 kbit/s to 1 Tbit/s,
//! an overhead of at most 1 MB; with Pareto jitter every mean at least 5.25 ms (below it
//! SimBlock's shape, 0.2 × mean, would not keep the mean).
//!
//! Presets:
//! - [`NetModel::uniform`]: one region, a fixed latency plus a uniform jitter, unlimited
//!   bandwidth (the small scenario tests' network);
//! - [`NetModel::seed_001`]: seed 001's three sites (Canada, the UK, India), one-way delays of
//!   half the pings seed 001 reports, the same table the real-process experiments emulate;
//! - [`NetModel::simblock`]: SimBlock's six regions with its measured Bitcoin data of 2019
//!   (latency, per-region bandwidth, the share of Bitcoin nodes per region) and its latency
//!   distribution. Source: SimBlock (Aoki et al., "SimBlock: A Blockchain Network Simulator",
//!   IEEE INFOCOM Workshops 2019), `simulator/src/main/java/simblock/settings/
//!   NetworkConfiguration.java` (`LATENCY_2019`, `UPLOAD_BANDWIDTH_2019`,
//!   `DOWNLOAD_BANDWIDTH_2019`, `REGION_DISTRIBUTION_BITCOIN_2019`) and `simulator/Network.java`
//!   (`getLatency`: a Pareto draw of mean the table's value).
//!
//! A model read from a file ([`NetModel::from_toml`]) is checked whole before use; every
//! mistake names its place (`regions[2].share: negative`).
//!
//! Must not: draw randomness of its own (the world passes its seeded source in) or read a
//! clock.

use rand_core::Rng;

use crate::uplink::Uplink;

/// One region of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    /// Its name.
    pub name: String,
    /// The share of nodes placed in it (the shares need not sum to 1: they are weights).
    pub share: f64,
    /// A node's upload bandwidth, bits per second (0: unlimited).
    pub up_bps: u64,
    /// A node's download bandwidth, bits per second (0: unlimited).
    pub down_bps: u64,
}

/// How a message's latency varies around its pair of regions' mean.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Jitter {
    /// None: every message takes the mean.
    None,
    /// The mean plus a uniform draw in `[0, max_us]`.
    Uniform {
        /// The largest extra delay, µs.
        max_us: u64,
    },
    /// SimBlock's: a Pareto draw of scale `mean − 5 ms` and shape `0.2 × mean` (ms), whose
    /// mean is the table's value and whose tail is long.
    Pareto,
}

/// The network model.
#[derive(Clone, Debug, PartialEq)]
pub struct NetModel {
    /// A name for reports.
    pub name: String,
    /// The regions.
    pub regions: Vec<Region>,
    /// `latency_us[i][j]`: the mean one-way latency from region `i` to region `j`, µs.
    pub latency_us: Vec<Vec<u64>>,
    /// The per-message variation.
    pub jitter: Jitter,
    /// The probability that a gossip message is lost on a link (requests and responses travel
    /// on reliable streams).
    pub loss: f64,
    /// Bytes a message costs on the wire beyond its payload (framing, stream and transport
    /// headers).
    pub overhead_bytes: u64,
    /// How a node's uplink is shared among the messages it sends (SimBlock's one after
    /// another by default; `crate::uplink`).
    pub uplink: Uplink,
}

/// A mistake in a model, with its place.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{place}: {what}")]
pub struct ModelError {
    /// Where: a path into the document (`regions[1].up_mbps`), or `document` for its syntax.
    pub place: String,
    /// What is wrong.
    pub what: String,
}

fn err(place: impl Into<String>, what: impl Into<String>) -> ModelError {
    ModelError { place: place.into(), what: what.into() }
}

const MBPS: u64 = 1_000_000;
/// The longest latency or jitter a model may hold, µs (an hour).
pub const MAX_LATENCY_US: u64 = 3_600_000_000;
/// The fastest link, bits per second (1 Tbit/s); the slowest limited link is 1 kbit/s.
const MAX_BPS: u64 = 1_000_000 * MBPS;
const MIN_BPS: u64 = 1_000;
/// The largest per-message overhead, bytes.
const MAX_OVERHEAD: u64 = 1 << 20;
/// The smallest mean latency a Pareto jitter keeps, µs.
const PARETO_MIN_MEAN_US: u64 = 5_250;

impl NetModel {
    /// One region, `latency_ms` one way plus up to `jitter_ms` more, unlimited bandwidth,
    /// gossip lost with probability `loss`.
    pub fn uniform(latency_ms: u64, jitter_ms: u64, loss: f64) -> NetModel {
        NetModel {
            name: format!("uniform {latency_ms} ms"),
            regions: vec![Region { name: "all".into(), share: 1.0, up_bps: 0, down_bps: 0 }],
            latency_us: vec![vec![latency_ms * 1_000]],
            jitter: if jitter_ms == 0 { Jitter::None } else { Jitter::Uniform { max_us: jitter_ms * 1_000 } },
            loss,
            overhead_bytes: 0,
            uplink: Uplink::Fifo,
        }
    }

    /// Seed 001's three sites — Canada (where it sent from), the UK and India — with one-way
    /// delays of half its pings (Canada–UK 200 ms, Canada–India 350 ms; the UK–India ping,
    /// which seed 001 does not give, taken as 120 ms), 1 ms within a site, nodes spread evenly,
    /// a uniform jitter of 10% of the delay, and 100 Mbit/s each way per node (seed 001 does not
    /// give its links' bandwidth).
    pub fn seed_001() -> NetModel {
        let ms = [[1, 100, 175], [100, 1, 60], [175, 60, 1]];
        let region =
            |name: &str| Region { name: name.into(), share: 1.0, up_bps: 100 * MBPS, down_bps: 100 * MBPS };
        NetModel {
            name: "seed 001".into(),
            regions: vec![region("Canada"), region("UK"), region("India")],
            latency_us: ms.iter().map(|r| r.iter().map(|m| m * 1_000).collect()).collect(),
            jitter: Jitter::Uniform { max_us: 17_500 },
            loss: 0.0,
            overhead_bytes: 64,
            uplink: Uplink::Fifo,
        }
    }

    /// SimBlock's six regions with its 2019 tables (see the module's documentation for the
    /// source): mean one-way latency, per-region upload and download bandwidth, the share of
    /// Bitcoin nodes per region, and its Pareto latency distribution.
    pub fn simblock() -> NetModel {
        const NAMES: [&str; 6] =
            ["North America", "Europe", "South America", "Asia Pacific", "Japan", "Australia"];
        // LATENCY_2019, ms.
        const LATENCY: [[u64; 6]; 6] = [
            [32, 124, 184, 198, 151, 189],
            [124, 11, 227, 237, 252, 294],
            [184, 227, 88, 325, 301, 322],
            [198, 237, 325, 85, 58, 198],
            [151, 252, 301, 58, 12, 126],
            [189, 294, 322, 198, 126, 16],
        ];
        // UPLOAD_BANDWIDTH_2019 and DOWNLOAD_BANDWIDTH_2019, bit/s.
        const UP: [u64; 6] = [19_200_000, 20_700_000, 5_800_000, 15_700_000, 10_200_000, 11_300_000];
        const DOWN: [u64; 6] = [52_000_000, 40_000_000, 18_000_000, 22_800_000, 22_800_000, 29_900_000];
        // REGION_DISTRIBUTION_BITCOIN_2019.
        const SHARE: [f64; 6] = [0.3316, 0.4998, 0.0090, 0.1177, 0.0224, 0.0195];
        NetModel {
            name: "SimBlock 2019".into(),
            regions: (0..6)
                .map(|i| Region { name: NAMES[i].into(), share: SHARE[i], up_bps: UP[i], down_bps: DOWN[i] })
                .collect(),
            latency_us: LATENCY.iter().map(|r| r.iter().map(|m| m * 1_000).collect()).collect(),
            jitter: Jitter::Pareto,
            loss: 0.0,
            overhead_bytes: 64,
            uplink: Uplink::Fifo,
        }
    }

    /// A preset by name: `uniform`, `seed-001`, `simblock`.
    pub fn preset(name: &str) -> Option<NetModel> {
        match name {
            "uniform" => Some(NetModel::uniform(20, 10, 0.0)),
            "seed-001" => Some(NetModel::seed_001()),
            "simblock" => Some(NetModel::simblock()),
            _ => None,
        }
    }

    /// Checks the model: at least one region, positive shares, a square latency table of the
    /// regions' size, a loss probability in [0, 1).
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.regions.is_empty() {
            return Err(err("regions", "at least one region is needed"));
        }
        let mut total = 0.0;
        for (i, r) in self.regions.iter().enumerate() {
            if !(r.share.is_finite() && r.share >= 0.0) {
                return Err(err(format!("regions[{i}].share"), format!("{} is not a weight ≥ 0", r.share)));
            }
            total += r.share;
        }
        if !(total.is_finite() && total > 0.0) {
            return Err(err("regions", format!("the shares sum to {total}: no placement")));
        }
        for (i, r) in self.regions.iter().enumerate() {
            for (key, bps) in [("up_mbps", r.up_bps), ("down_mbps", r.down_bps)] {
                if bps != 0 && !(MIN_BPS..=MAX_BPS).contains(&bps) {
                    return Err(err(
                        format!("regions[{i}].{key}"),
                        format!("{bps} bit/s is outside 1 kbit/s to 1 Tbit/s (0: unlimited)"),
                    ));
                }
            }
        }
        if self.overhead_bytes > MAX_OVERHEAD {
            return Err(err("overhead_bytes", format!("{} is over {MAX_OVERHEAD}", self.overhead_bytes)));
        }
        if let Jitter::Uniform { max_us } = self.jitter {
            if max_us > MAX_LATENCY_US {
                return Err(err("jitter.uniform_ms", "over an hour"));
            }
        }
        if self.latency_us.len() != self.regions.len() {
            return Err(err(
                "latency_ms",
                format!("{} rows for {} regions", self.latency_us.len(), self.regions.len()),
            ));
        }
        for (i, row) in self.latency_us.iter().enumerate() {
            if row.len() != self.regions.len() {
                return Err(err(
                    format!("latency_ms[{i}]"),
                    format!("{} columns for {} regions", row.len(), self.regions.len()),
                ));
            }
            for (j, &us) in row.iter().enumerate() {
                if us > MAX_LATENCY_US {
                    return Err(err(format!("latency_ms[{i}][{j}]"), "over an hour"));
                }
                if self.jitter == Jitter::Pareto && us < PARETO_MIN_MEAN_US {
                    return Err(err(
                        format!("latency_ms[{i}][{j}]"),
                        format!("{} ms is below the 5.25 ms a Pareto jitter needs", us as f64 / 1_000.0),
                    ));
                }
            }
        }
        if !(self.loss.is_finite() && (0.0..1.0).contains(&self.loss)) {
            return Err(err("loss", format!("{} is not a probability below 1", self.loss)));
        }
        Ok(())
    }

    /// The region of each of `n` nodes: each region gets its share of `n` (largest remainders
    /// first), then the assignment is shuffled by `rng`. The counts are exact, so a region of
    /// share 0.5 holds half the nodes at any `n`.
    pub fn place(&self, n: usize, rng: &mut impl Rng) -> Vec<u16> {
        let total: f64 = self.regions.iter().map(|r| r.share).sum();
        let exact: Vec<f64> = self.regions.iter().map(|r| r.share / total * n as f64).collect();
        let mut counts: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
        // The floors leave fewer nodes than regions to place: one more each to the largest
        // remainders (ties to the earlier region).
        let left = n - counts.iter().sum::<usize>().min(n);
        let mut by_rest: Vec<usize> = (0..counts.len()).collect();
        by_rest.sort_by(|&a, &b| {
            (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())).then(a.cmp(&b))
        });
        for &i in by_rest.iter().take(left) {
            counts[i] += 1;
        }
        let mut out: Vec<u16> =
            counts.iter().enumerate().flat_map(|(i, &c)| std::iter::repeat_n(i as u16, c)).collect();
        for i in (1..out.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            out.swap(i, j);
        }
        out
    }

    /// The mean one-way latency between two regions, µs.
    pub fn mean_us(&self, from: u16, to: u16) -> u64 {
        self.latency_us.get(usize::from(from)).and_then(|r| r.get(usize::from(to))).copied().unwrap_or(0)
    }

    /// A message's latency between two regions, µs: the mean and the jitter's draw.
    pub fn draw_us(&self, from: u16, to: u16, rng: &mut impl Rng) -> u64 {
        let mean = self.mean_us(from, to);
        match self.jitter {
            Jitter::None => mean,
            Jitter::Uniform { max_us } => mean + rng.next_u64() % (max_us + 1),
            Jitter::Pareto => pareto_us(mean, rng),
        }
    }

    /// The longest a message may take between two regions beyond its serialisation, µs: the
    /// mean and the uniform jitter's bound, or for Pareto's unbounded tail the 99.9th
    /// percentile.
    pub fn bound_us(&self, from: u16, to: u16) -> u64 {
        let mean = self.mean_us(from, to);
        match self.jitter {
            Jitter::None => mean,
            Jitter::Uniform { max_us } => mean + max_us,
            Jitter::Pareto => {
                let (scale, shape) = pareto_params(mean);
                (scale / 0.001f64.powf(1.0 / shape)).ceil() as u64
            }
        }
    }

    /// Parses a model from TOML:
    ///
    /// ```toml
    /// name = "two sites"
    /// jitter = "pareto"            # or "none", or { uniform_ms = 5 }
    /// loss = 0.0
    /// overhead_bytes = 64
    /// uplink = "fifo"             # or "fair" (shared equally among peers), or "tcp" (a send
    ///                             # buffer at a time, a window per round trip)
    /// latency_ms = [[10, 80], [80, 10]]
    /// [[regions]]
    /// name = "west"
    /// share = 0.5
    /// up_mbps = 20
    /// down_mbps = 50
    /// ```
    pub fn from_toml(text: &str) -> Result<NetModel, ModelError> {
        let doc: toml::Table =
            text.parse().map_err(|e: toml::de::Error| err("document", e.message().to_string()))?;
        for key in doc.keys() {
            if !["name", "jitter", "loss", "overhead_bytes", "uplink", "latency_ms", "regions"]
                .contains(&key.as_str())
            {
                return Err(err(key.as_str(), "unknown key"));
            }
        }
        let name = match doc.get("name") {
            None => "from a file".to_string(),
            Some(v) => v.as_str().ok_or_else(|| err("name", "not a string"))?.to_string(),
        };
        let number = |v: &toml::Value, place: &str| -> Result<f64, ModelError> {
            match v {
                toml::Value::Integer(i) => Ok(*i as f64),
                toml::Value::Float(f) => Ok(*f),
                _ => Err(err(place, "not a number")),
            }
        };
        let non_negative = |v: &toml::Value, place: &str| -> Result<f64, ModelError> {
            let x = number(v, place)?;
            if !(x.is_finite() && x >= 0.0) {
                return Err(err(place, format!("{x} is negative or not finite")));
            }
            Ok(x)
        };
        let regions_doc = doc
            .get("regions")
            .and_then(|v| v.as_array())
            .ok_or_else(|| err("regions", "missing: an array of tables"))?;
        let mut regions = Vec::new();
        for (i, r) in regions_doc.iter().enumerate() {
            let place = format!("regions[{i}]");
            let t = r.as_table().ok_or_else(|| err(&place, "not a table"))?;
            for key in t.keys() {
                if !["name", "share", "up_mbps", "down_mbps"].contains(&key.as_str()) {
                    return Err(err(format!("{place}.{key}"), "unknown key"));
                }
            }
            let name = t
                .get("name")
                .and_then(|v| v.as_str())
                .ok_or_else(|| err(format!("{place}.name"), "missing or not a string"))?;
            if regions.iter().any(|x: &Region| x.name == name) {
                return Err(err(format!("{place}.name"), format!("{name:?} is named twice")));
            }
            let share = match t.get("share") {
                None => 1.0,
                Some(v) => non_negative(v, &format!("{place}.share"))?,
            };
            let mbps = |key: &str| -> Result<u64, ModelError> {
                match t.get(key) {
                    None => Ok(0),
                    Some(v) => {
                        let mbps = non_negative(v, &format!("{place}.{key}"))?;
                        let bps = (mbps * MBPS as f64).round();
                        if mbps > 0.0 && !(MIN_BPS as f64..=MAX_BPS as f64).contains(&bps) {
                            return Err(err(
                                format!("{place}.{key}"),
                                format!("{mbps} Mbit/s is outside 0.001 to 1,000,000"),
                            ));
                        }
                        Ok(bps as u64)
                    }
                }
            };
            regions.push(Region {
                name: name.to_string(),
                share,
                up_bps: mbps("up_mbps")?,
                down_bps: mbps("down_mbps")?,
            });
        }
        let rows = doc
            .get("latency_ms")
            .and_then(|v| v.as_array())
            .ok_or_else(|| err("latency_ms", "missing: one row per region"))?;
        let mut latency_us = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let row = row.as_array().ok_or_else(|| err(format!("latency_ms[{i}]"), "not an array"))?;
            let mut out = Vec::new();
            for (j, v) in row.iter().enumerate() {
                let ms = non_negative(v, &format!("latency_ms[{i}][{j}]"))?;
                if ms * 1_000.0 > MAX_LATENCY_US as f64 {
                    return Err(err(format!("latency_ms[{i}][{j}]"), format!("{ms} ms is over an hour")));
                }
                out.push((ms * 1_000.0).round() as u64);
            }
            latency_us.push(out);
        }
        let jitter = match doc.get("jitter") {
            None => Jitter::None,
            Some(toml::Value::String(s)) if s == "none" => Jitter::None,
            Some(toml::Value::String(s)) if s == "pareto" => Jitter::Pareto,
            Some(toml::Value::Table(t)) if t.len() == 1 && t.contains_key("uniform_ms") => {
                let ms = non_negative(&t["uniform_ms"], "jitter.uniform_ms")?;
                if ms * 1_000.0 > MAX_LATENCY_US as f64 {
                    return Err(err("jitter.uniform_ms", format!("{ms} ms is over an hour")));
                }
                Jitter::Uniform { max_us: (ms * 1_000.0).round() as u64 }
            }
            Some(_) => return Err(err("jitter", "expected \"none\", \"pareto\" or { uniform_ms = N }")),
        };
        let loss = match doc.get("loss") {
            None => 0.0,
            Some(v) => number(v, "loss")?,
        };
        let overhead_bytes = match doc.get("overhead_bytes") {
            None => 0,
            Some(v) => {
                let b = non_negative(v, "overhead_bytes")?;
                if b > MAX_OVERHEAD as f64 {
                    return Err(err("overhead_bytes", format!("{b} is over {MAX_OVERHEAD}")));
                }
                b as u64
            }
        };
        let uplink = match doc.get("uplink") {
            None => Uplink::Fifo,
            Some(v) => v
                .as_str()
                .and_then(Uplink::from_name)
                .ok_or_else(|| err("uplink", "expected \"fifo\", \"fair\" or \"tcp\""))?,
        };
        let m = NetModel { name, regions, latency_us, jitter, loss, overhead_bytes, uplink };
        m.validate()?;
        Ok(m)
    }
}

/// SimBlock's Pareto parameters for a mean of `mean_us`: scale `mean − 5 ms`, shape
/// `0.2 × mean` in ms (at least a little above 1, so that the mean exists).
fn pareto_params(mean_us: u64) -> (f64, f64) {
    let mean_ms = mean_us as f64 / 1_000.0;
    let scale_us = ((mean_ms - 5.0).max(0.5)) * 1_000.0;
    let shape = (0.2 * mean_ms).max(1.05);
    (scale_us, shape)
}

/// A uniform draw in (0, 1] (never 0: its logarithm and its powers are finite).
pub(crate) fn unit_open(rng: &mut impl Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
}

/// A Pareto draw as SimBlock's `getLatency` makes it: `scale / u^(1/shape)`, `u` uniform in
/// (0, 1].
fn pareto_us(mean_us: u64, rng: &mut impl Rng) -> u64 {
    let (scale, shape) = pareto_params(mean_us);
    let u = unit_open(rng);
    (scale / u.powf(1.0 / shape)).round().min(MAX_LATENCY_US as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn presets_are_valid_and_simblock_keeps_its_source_tables() {
        for name in ["uniform", "seed-001", "simblock"] {
            let m = NetModel::preset(name).unwrap_or_else(|| panic!("{name}"));
            m.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let s = NetModel::simblock();
        assert_eq!(s.mean_us(0, 1), 124_000);
        assert_eq!(s.mean_us(3, 4), 58_000);
        assert_eq!(s.regions[1].up_bps, 20_700_000);
        assert_eq!(s.regions[2].down_bps, 18_000_000);
        assert!(NetModel::preset("nowhere").is_none());
    }

    #[test]
    fn placement_gives_each_region_its_share_exactly() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let m = NetModel::simblock();
        let placed = m.place(10_000, &mut rng);
        let count = |r: u16| placed.iter().filter(|&&x| x == r).count();
        assert_eq!(placed.len(), 10_000);
        assert_eq!(count(1), 4998);
        assert_eq!(count(0), 3316);
        assert_eq!(count(2), 90);
        let small = NetModel::seed_001().place(4, &mut rng);
        assert_eq!(small.len(), 4);
        let mut counts = [0; 3];
        small.iter().for_each(|&r| counts[usize::from(r)] += 1);
        counts.sort();
        assert_eq!(counts, [1, 1, 2], "{small:?}");
    }

    #[test]
    fn the_pareto_draws_keep_the_tables_mean() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let m = NetModel::simblock();
        let n = 200_000;
        let sum: u64 = (0..n).map(|_| m.draw_us(0, 1, &mut rng)).sum();
        let mean = sum as f64 / n as f64;
        assert!((mean / 124_000.0 - 1.0).abs() < 0.02, "mean {mean}");
        let mut above = 0;
        for _ in 0..n {
            if m.draw_us(0, 1, &mut rng) > m.bound_us(0, 1) {
                above += 1;
            }
        }
        assert!(above < n / 500, "the bound is the 99.9th percentile: {above} of {n} above it");
    }

    #[test]
    fn a_model_file_is_read_and_its_mistakes_are_placed() {
        let text = r#"
            name = "two sites"
            jitter = { uniform_ms = 5 }
            latency_ms = [[10, 80], [80, 10.5]]
            [[regions]]
            name = "west"
            share = 3
            up_mbps = 20
            down_mbps = 50
            [[regions]]
            name = "east"
        "#;
        let m = NetModel::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.latency_us, vec![vec![10_000, 80_000], vec![80_000, 10_500]]);
        assert_eq!(m.regions[0].up_bps, 20_000_000);
        assert_eq!(m.regions[1].down_bps, 0);
        assert_eq!(m.jitter, Jitter::Uniform { max_us: 5_000 });
        let bad = |t: &str| NetModel::from_toml(t).map(|_| ()).unwrap_err().to_string();
        let base = "latency_ms = [[1]]\n[[regions]]\nname = \"a\"\n";
        assert_eq!(bad(&format!("{base}share = -1\n")), "regions[0].share: -1 is negative or not finite");
        assert_eq!(
            bad("latency_ms = [[1, 2]]\n[[regions]]\nname = \"a\"\n"),
            "latency_ms[0]: 2 columns for 1 regions"
        );
        assert_eq!(
            bad("latency_ms = [[-3]]\n[[regions]]\nname = \"a\"\n"),
            "latency_ms[0][0]: -3 is negative or not finite"
        );
        assert_eq!(bad(&format!("{base}colour = 1\n")), "regions[0].colour: unknown key");
        assert_eq!(bad(&format!("loss = 1.5\n{base}")), "loss: 1.5 is not a probability below 1");
        assert_eq!(bad("latency_ms = []\nregions = []\n"), "regions: at least one region is needed");
        assert!(bad("latency_ms = [[").starts_with("document: "));
        assert_eq!(
            bad("latency_ms = [[1,1],[1,1]]\n[[regions]]\nname = \"a\"\n[[regions]]\nname = \"a\"\n"),
            "regions[1].name: \"a\" is named twice"
        );
        // Values no clock sum could hold, or that would quietly mean something else.
        assert_eq!(
            bad("latency_ms = [[4e6]]\n[[regions]]\nname = \"a\"\n"),
            "latency_ms[0][0]: 4000000 ms is over an hour"
        );
        assert_eq!(
            bad(&format!("jitter = {{ uniform_ms = 4e6 }}\n{base}")),
            "jitter.uniform_ms: 4000000 ms is over an hour"
        );
        assert!(bad(&format!("{base}up_mbps = 1e-7\n"))
            .starts_with("regions[0].up_mbps: 0.0000001 Mbit/s is outside"));
        assert!(bad(&format!("{base}down_mbps = 1e9\n")).starts_with("regions[0].down_mbps: "));
        assert!(bad(&format!("overhead_bytes = 1e12\n{base}")).starts_with("overhead_bytes: "));
        assert!(bad(&format!("uplink = \"reno\"\n{base}")).starts_with("uplink: expected"));
        assert_eq!(NetModel::from_toml(&format!("uplink = \"fair\"\n{base}")).unwrap().uplink, Uplink::Fair);
        assert_eq!(NetModel::from_toml(&format!("uplink = \"tcp\"\n{base}")).unwrap().uplink, Uplink::Tcp);
        assert_eq!(NetModel::from_toml(base).unwrap().uplink, Uplink::Fifo);
        assert_eq!(
            bad(&format!("jitter = \"pareto\"\n{base}")),
            "latency_ms[0][0]: 1 ms is below the 5.25 ms a Pareto jitter needs"
        );
        assert_eq!(
            bad("latency_ms = [[10,10],[10,10]]\n[[regions]]\nname = \"a\"\nshare = 1e308\n[[regions]]\nname = \"b\"\nshare = 1e308\n"),
            "regions: the shares sum to inf: no placement"
        );
    }

    #[test]
    fn a_pareto_draw_never_leaves_the_hour() {
        let m = NetModel::simblock();
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        assert!((0..100_000).all(|_| m.draw_us(0, 5, &mut rng) <= MAX_LATENCY_US));
    }
}
