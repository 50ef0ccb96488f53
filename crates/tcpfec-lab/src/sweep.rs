//! Turns flags and TOML into a list of runs: every axis may hold a comma-separated list,
//! and the runs are the cartesian product of all axes times the seeds.

use core::time::Duration;
use std::collections::BTreeMap;
use tcpfec_proto::Scheme;
use tcpfec_sim::units::{parse_duration, parse_probability, parse_range, parse_rate, parse_size};
use tcpfec_sim::{App, LossSpec, Resume, Scenario, Start, Topology};

/// Axis names in output order, with their defaults (None: derived from other axes).
pub const AXES: &[(&str, Option<&str>)] = &[
    ("scheme", Some("sack")),
    ("topology", Some("path")),
    ("flows", Some("1")),
    ("bottleneck", Some("100mbit")),
    ("access-rate", None),
    ("delay", Some("200ms")),
    ("access-delay", Some("1ms")),
    ("buffer", Some("50")),
    ("host-buffer", None),
    ("host-jitter", None),
    ("clock-skew", None),
    ("packet-size", Some("1500")),
    ("loss", Some("0.05%")),
    ("ge", None),
    ("loss-reverse", Some("0")),
    ("ge-reverse", None),
    ("delayed-ack", Some("off")),
    ("byte-counting", None),
    ("rack", None),
    ("hystart", None),
    ("hystart-pp", None),
    ("prr", None),
    ("encapsulation", None),
    ("initial-window", Some("2")),
    ("min-rto", Some("200ms")),
    ("duration", Some("220s")),
    ("window", None),
    ("transfer", None),
    ("start", Some("0s")),
    ("max-window", None),
    ("loss-schedule", None),
    ("app-rate", None),
    ("request-response", None),
    ("target-rate", None),
    ("background", None),
    ("background-direction", None),
    ("background-scheme", Some("reno")),
    ("resume", None),
];

/// Most runs a sweep may have unless `--max-runs` raises it: the run list and the results
/// are held in memory, and ten thousand runs is already a long sweep.
pub const DEFAULT_MAX_RUNS: u64 = 10_000;

/// Most simulator events a sweep may be estimated to cost without `--i-know`: at about a
/// million events per second per core ([`EVENTS_PER_CORE_SECOND`]), some 30 core-hours.
pub const MAX_EVENTS: f64 = 1e11;

/// Most per-flow results (runs × flows) a sweep may keep without `--i-know`: each is about
/// 200 bytes in memory, so some 2 GB.
pub const MAX_FLOW_RESULTS: u64 = 10_000_000;

/// The simulator's speed on one core, roughly, for telling how long a refused sweep would
/// take (it varies with the scenario and the machine).
pub const EVENTS_PER_CORE_SECOND: f64 = 1e6;

/// How large a sweep may be before it starts; see [`DEFAULT_MAX_RUNS`], [`MAX_EVENTS`] and
/// [`MAX_FLOW_RESULTS`].
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most runs (`--max-runs`).
    pub max_runs: u64,
    /// Lift the limits on estimated events and per-flow results (`--i-know`).
    pub i_know: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_runs: DEFAULT_MAX_RUNS,
            i_know: false,
        }
    }
}

impl Limits {
    /// Refuses a sweep of `runs` runs (`None`: more than a u64 counts).
    pub fn check_runs(&self, runs: Option<u64>) -> Result<(), String> {
        match runs {
            Some(n) if n <= self.max_runs => Ok(()),
            Some(n) => Err(format!(
                "sweep too large: {n} runs, more than --max-runs allows ({}); pass \
                 --max-runs {n} to run it anyway",
                self.max_runs
            )),
            None => Err("sweep too large: more runs than can be counted (--seeds, lists)".into()),
        }
    }

    /// Refuses a sweep that is estimated to cost more than the limits allow: its number of
    /// runs, simulator events ([`Scenario::estimated_events`]) and per-flow results.
    pub fn check(&self, runs: &[Run]) -> Result<(), String> {
        self.check_runs(Some(runs.len() as u64))?;
        let size = SweepSize::of(runs);
        if self.i_know {
            return Ok(());
        }
        if size.events > MAX_EVENTS {
            return Err(format!(
                "sweep too costly: about {:.1e} simulator events ({}), roughly {:.0} \
                 core-hours, over the limit of {MAX_EVENTS:.0e}; shorten it or pass --i-know \
                 to run it anyway",
                size.events,
                size.describe(),
                size.events / EVENTS_PER_CORE_SECOND / 3600.0
            ));
        }
        if size.flow_results > MAX_FLOW_RESULTS {
            return Err(format!(
                "sweep too large: {} per-flow results to keep ({}), about {} GB, over the \
                 limit of {MAX_FLOW_RESULTS}; use fewer runs or flows, or pass --i-know to \
                 run it anyway",
                size.flow_results,
                size.describe(),
                size.flow_results * 200 / 1_000_000_000
            ));
        }
        Ok(())
    }
}

/// Largest settings file (`sim --config`, a `reproduce` experiment) read: 1 MiB, far more
/// than any list of settings needs, so that a wrong path (a log, a device) fails at once.
pub const MAX_SETTINGS_FILE: u64 = 1 << 20;

/// Reads a settings file of at most [`MAX_SETTINGS_FILE`] bytes; errors say why without
/// naming the file (the caller does).
pub fn read_settings_file(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read it: {e}"))?;
    // Read one byte past the limit rather than trusting the size in the metadata, which
    // is 0 for pipes and devices.
    let mut bytes = Vec::new();
    file.take(MAX_SETTINGS_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_SETTINGS_FILE {
        return Err(format!(
            "larger than {} KiB; a settings file is a few lines of TOML",
            MAX_SETTINGS_FILE / 1024
        ));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}

/// What a sweep will cost, estimated before it starts.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SweepSize {
    /// Runs.
    pub runs: u64,
    /// Measured flows summed over the runs (each keeps a result).
    pub flow_results: u64,
    /// Simulated seconds summed over the runs.
    pub sim_seconds: f64,
    /// Simulator events summed over the runs, estimated.
    pub events: f64,
}

impl SweepSize {
    /// The size of `runs`.
    pub fn of(runs: &[Run]) -> SweepSize {
        let mut size = SweepSize::default();
        for r in runs {
            let sc = &r.scenario;
            size.runs += 1;
            size.flow_results += sc.flows as u64;
            size.sim_seconds += sc.duration.as_secs_f64();
            size.events += sc.estimated_events();
        }
        size
    }

    /// "N run(s), F flow(s) and S simulated seconds in all".
    fn describe(&self) -> String {
        format!(
            "{} run(s), {} flow(s) and {:.1} simulated seconds in all",
            self.runs, self.flow_results, self.sim_seconds
        )
    }
}

/// What separates the values of a list on `axis`: Gilbert–Elliott models and loss
/// schedules contain commas themselves, and so do saved paths (`resume`): their lists
/// use `;`.
fn separator(axis: &str) -> char {
    if axis.starts_with("ge") || axis == "loss-schedule" || axis == "resume" {
        ';'
    } else {
        ','
    }
}

/// Values given for each axis (a list each), before expansion.
#[derive(Debug, Clone, Default)]
pub struct Axes {
    values: BTreeMap<String, Vec<String>>,
}

/// The runs of a sweep, each built when asked for ([`Axes::expansion`]).
#[derive(Debug, Clone)]
pub struct Expansion {
    /// Every axis with its values, in [`AXES`] order (the last varies fastest).
    axes: Vec<(String, Vec<String>)>,
    seed: u64,
    seeds: u64,
    len: usize,
}

impl Expansion {
    /// Runs in the sweep.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a sweep without runs (never: every axis has a value).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Run `i`: point `i / seeds` of the axes' product (the last axis varies fastest),
    /// with seed `seed + i % seeds`.
    pub fn run(&self, i: usize) -> Result<Run, String> {
        let seeds = self.seeds as usize;
        let mut point = i / seeds;
        let mut params = vec![(String::new(), String::new()); self.axes.len()];
        for (slot, (axis, values)) in params.iter_mut().zip(&self.axes).rev() {
            *slot = (axis.clone(), values[point % values.len()].clone());
            point /= values.len();
        }
        let mut scenario = scenario_of(&params)?;
        scenario.seed = self.seed + (i % seeds) as u64;
        Ok(Run { params, scenario })
    }
}

/// One run of a sweep: the axis values that define it and the parsed scenario.
#[derive(Debug, Clone)]
pub struct Run {
    /// (axis, value) for every axis, in [`AXES`] order.
    pub params: Vec<(String, String)>,
    /// The scenario to simulate.
    pub scenario: Scenario,
}

impl Axes {
    /// Sets an axis from a flag value; a comma list makes a sweep. Gilbert–Elliott models
    /// contain commas themselves, so several of them are separated by `;`.
    pub fn set(&mut self, axis: &str, raw: &str) -> Result<(), String> {
        if !AXES.iter().any(|(a, _)| *a == axis) {
            return Err(format!("unknown setting '{axis}'"));
        }
        let list: Vec<String> = raw
            .split(separator(axis))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if list.is_empty() {
            return Err(format!("--{axis}: empty value"));
        }
        self.values.insert(axis.to_string(), list);
        Ok(())
    }

    /// True if the axis was given.
    pub fn has(&self, axis: &str) -> bool {
        self.values.contains_key(axis)
    }

    /// Forgets a setting (it takes its default again).
    pub fn unset(&mut self, axis: &str) {
        self.values.remove(axis);
    }

    /// Reads axes from TOML text: keys are flag names (`-` or `_`), values are strings,
    /// numbers, booleans or arrays of them.
    pub fn from_toml(text: &str) -> Result<Axes, String> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| format!("not valid TOML: {}", e.message()))?;
        let mut axes = Axes::default();
        for (key, value) in table {
            let axis = key.replace('_', "-");
            let items: Vec<toml::Value> = match value {
                toml::Value::Array(a) => a,
                v => vec![v],
            };
            let mut strings = Vec::new();
            for v in items {
                strings.push(match v {
                    toml::Value::String(s) => s,
                    toml::Value::Integer(i) => i.to_string(),
                    toml::Value::Float(f) => f.to_string(),
                    toml::Value::Boolean(b) => if b { "on" } else { "off" }.to_string(),
                    other => return Err(format!("'{key}': unsupported value {other}")),
                });
            }
            if !AXES.iter().any(|(a, _)| *a == axis) {
                return Err(format!("'{key}': unknown setting"));
            }
            axes.set(&axis, &strings.join(&separator(&axis).to_string()))?;
        }
        Ok(axes)
    }

    /// The axes as TOML that [`Axes::from_toml`] reads back to the same axes: one list
    /// of strings per axis given, in name order (a sharded sweep's manifest keeps it).
    pub fn to_toml(&self) -> String {
        let mut table = toml::Table::new();
        for (axis, list) in &self.values {
            let items = list
                .iter()
                .map(|v| toml::Value::String(v.clone()))
                .collect();
            table.insert(axis.clone(), toml::Value::Array(items));
        }
        table.to_string()
    }

    /// Forgets an axis, so that another source can set it (or a conflicting one).
    pub fn clear(&mut self, axis: &str) {
        self.values.remove(axis);
    }

    /// Overlays `other` (later wins).
    pub fn merge(&mut self, other: Axes) {
        self.values.extend(other.values);
    }

    /// Runs the sweep holds: the product of the axes' list lengths times `seeds`; `None`
    /// if that overflows.
    pub fn run_count(&self, seeds: u64) -> Option<u64> {
        self.values
            .values()
            .try_fold(seeds, |n, list| n.checked_mul(list.len() as u64))
    }

    /// Expands into runs: cartesian product of all axes, each with seeds `seed..seed+seeds`.
    /// Refuses, before building any, a sweep of more runs than `limits` allow.
    pub fn expand(&self, seed: u64, seeds: u64, limits: &Limits) -> Result<Vec<Run>, String> {
        let e = self.expansion(seed, seeds, limits)?;
        (0..e.len()).map(|i| e.run(i)).collect()
    }

    /// The sweep's runs without building them: [`Expansion::run`] builds run `i` (in the
    /// order of [`Axes::expand`]) on demand, so a sweep of a million runs need not be held.
    pub fn expansion(&self, seed: u64, seeds: u64, limits: &Limits) -> Result<Expansion, String> {
        if seeds == 0 {
            return Err("--seeds: must be at least 1".into());
        }
        if seed.checked_add(seeds).is_none() {
            return Err(format!(
                "--seed: {seed} plus {seeds} seeds is beyond the largest seed"
            ));
        }
        let count = self.run_count(seeds);
        limits.check_runs(count)?;
        if self.has("ge") && self.has("loss") {
            return Err("--ge and --loss both set: give one loss model".into());
        }
        if self.has("ge-reverse") && self.has("loss-reverse") {
            return Err("--ge-reverse and --loss-reverse both set: give one loss model".into());
        }
        let axes = AXES
            .iter()
            .filter_map(|(axis, default)| match (self.values.get(*axis), default) {
                (Some(v), _) => Some((axis.to_string(), v.clone())),
                (None, Some(d)) => Some((axis.to_string(), vec![d.to_string()])),
                (None, None) => None,
            })
            .collect();
        let len = usize::try_from(count.expect("checked above"))
            .map_err(|_| "sweep too large for this machine".to_string())?;
        Ok(Expansion {
            axes,
            seed,
            seeds,
            len,
        })
    }

    /// Axes that take more than one value (what a sweep varies).
    pub fn swept(&self) -> Vec<String> {
        AXES.iter()
            .filter(|(a, _)| self.values.get(*a).is_some_and(|v| v.len() > 1))
            .map(|(a, _)| a.to_string())
            .collect()
    }
}

fn field<T>(axis: &str, r: Result<T, String>) -> Result<T, String> {
    r.map_err(|e| format!("--{axis}: {e}"))
}

/// A clock skew in parts per million: `50`, `50ppm`, `-20ppm`.
fn parse_ppm(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let t = t.strip_suffix("ppm").unwrap_or(t).trim();
    t.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| format!("'{s}' is not a skew in parts per million, e.g. 50ppm or -20"))
}

fn parse_count(s: &str) -> Result<u32, String> {
    s.trim()
        .parse::<u32>()
        .map_err(|_| format!("'{s}' is not a whole number >= 0"))
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(format!("'{s}' is not on or off")),
    }
}

/// Parses `REQUEST[/RESPONSE]` (sizes, e.g. `100B`, `100B/10KB`; the response is as
/// large as the request if not given).
fn parse_exchange(v: &str) -> Result<App, String> {
    let (req, resp) = v.split_once('/').unwrap_or((v, v));
    let size = |s: &str| -> Result<u32, String> {
        let n = parse_size(s)?;
        u32::try_from(n).map_err(|_| format!("'{s}' is too large"))
    };
    Ok(App::RequestResponse {
        request: size(req)?,
        response: size(resp)?,
    })
}

/// Builds the scenario of one point of the sweep.
pub fn scenario_of(params: &[(String, String)]) -> Result<Scenario, String> {
    let mut sc = Scenario::default();
    let get = |a: &str| params.iter().find(|(k, _)| k == a).map(|(_, v)| v.as_str());
    for (axis, v) in params {
        let a = axis.as_str();
        match a {
            "scheme" => sc.scheme = field(a, Scheme::parse(v))?,
            "topology" => {
                sc.topology = match v.to_ascii_lowercase().as_str() {
                    "path" => Topology::Path,
                    "dumbbell" => Topology::Dumbbell,
                    _ => return Err(format!("--topology: '{v}' is not path or dumbbell")),
                }
            }
            "flows" => sc.flows = field(a, parse_count(v))?,
            "bottleneck" => sc.bottleneck_bps = field(a, parse_rate(v))?,
            "access-rate" => sc.access_bps = field(a, parse_rate(v))?,
            "delay" => sc.delay = field(a, parse_duration(v))?,
            "access-delay" => {
                sc.access_delay = if v.contains("..") {
                    field(a, parse_range(v, parse_duration))?
                } else {
                    let d = field(a, parse_duration(v))?;
                    (d, d)
                }
            }
            "buffer" => sc.buffer = field(a, parse_count(v))?,
            "host-buffer" => {
                sc.host_buffer = Some(if v == "inf" || v == "∞" {
                    u32::MAX
                } else {
                    field(a, parse_count(v))?
                })
            }
            "host-jitter" => sc.send_jitter = field(a, parse_duration(v))?,
            "clock-skew" => sc.clock_skew_ppm = field(a, parse_ppm(v))?,
            "resume" => sc.resume = field(a, Resume::parse(v))?,
            "packet-size" => sc.packet_size = field(a, parse_count(v))?,
            "loss" => sc.loss = LossSpec::bernoulli(field(a, parse_probability(v))?),
            "ge" => sc.loss = field(a, LossSpec::parse_ge(v))?,
            "loss-reverse" => {
                sc.reverse_loss = LossSpec::bernoulli(field(a, parse_probability(v))?)
            }
            "ge-reverse" => sc.reverse_loss = field(a, LossSpec::parse_ge(v))?,
            "delayed-ack" => sc.delayed_ack = field(a, parse_on_off(v))?,
            "byte-counting" => sc.byte_counting = field(a, parse_on_off(v))?,
            "rack" => sc.rack = field(a, parse_on_off(v))?,
            "hystart" => sc.hystart = field(a, parse_on_off(v))?,
            "hystart-pp" => sc.hystart_pp = field(a, parse_on_off(v))?,
            "prr" => sc.prr = field(a, parse_on_off(v))?,
            "encapsulation" => sc.encapsulation = field(a, parse_count(v))?,
            "initial-window" => sc.initial_window = field(a, parse_count(v))?,
            "min-rto" => sc.min_rto = field(a, parse_duration(v))?,
            "duration" => sc.duration = field(a, parse_duration(v))?,
            "window" => sc.window = field(a, parse_range(v, parse_duration))?,
            "transfer" => {
                sc.app = App::Transfer {
                    bytes: field(a, parse_size(v))?,
                }
            }
            "start" => {
                sc.start = if v.contains("..") {
                    let (from, to) = field(a, parse_range(v, parse_duration))?;
                    Start::Uniform { from, to }
                } else {
                    Start::Fixed {
                        at: field(a, parse_duration(v))?,
                    }
                }
            }
            "max-window" => sc.max_window = Some(field(a, parse_count(v))?),
            "loss-schedule" => sc.loss = field(a, LossSpec::parse_switching(v))?,
            "target-rate" => sc.target_rate = Some(field(a, parse_rate(v))?),
            "background" => {
                sc.background = v
                    .parse()
                    .map_err(|_| format!("--background: '{v}' is not a number of flows"))?
            }
            "background-direction" => {
                sc.background_uplink = match v.to_ascii_lowercase().as_str() {
                    "uplink" | "up" => true,
                    "downlink" | "down" => false,
                    _ => {
                        return Err(format!(
                            "--background-direction: '{v}' is not uplink or downlink"
                        ))
                    }
                }
            }
            "background-scheme" => sc.background_scheme = field(a, Scheme::parse(v))?,
            "app-rate" => {
                sc.app = App::Rate {
                    bps: field(a, parse_rate(v))?,
                }
            }
            "request-response" => sc.app = field(a, parse_exchange(v))?,
            _ => return Err(format!("unknown setting '{axis}'")),
        }
    }
    if get("transfer").is_some() && get("app-rate").is_some() {
        return Err("--app-rate: cannot be combined with --transfer".into());
    }
    if get("request-response").is_some() && (get("transfer").is_some() || get("app-rate").is_some())
    {
        return Err("--request-response: cannot be combined with --transfer or --app-rate".into());
    }
    if get("access-rate").is_none() {
        sc.access_bps = sc.bottleneck_bps;
    }
    if get("window").is_none() {
        sc.window = (Duration::ZERO, sc.duration);
    }
    sc.validate()?;
    Ok(sc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comma_lists_make_a_cartesian_product_times_seeds() {
        let mut a = Axes::default();
        a.set("delay", "10ms,50ms,100ms").unwrap();
        a.set("scheme", "sack,newreno").unwrap();
        let runs = a.expand(1, 2, &Limits::default()).unwrap();
        assert_eq!(runs.len(), 12);
        assert_eq!(a.swept(), vec!["scheme".to_string(), "delay".to_string()]);
        assert_eq!(runs[0].scenario.delay, Duration::from_millis(10));
        assert_eq!(runs[1].scenario.seed, 2);
    }

    /// Run `i` of the expansion is run `i` of the list, in the order the list takes
    /// (points in the axes' product with the last axis fastest, seeds innermost).
    #[test]
    fn an_expansion_builds_the_runs_of_the_list_one_at_a_time() {
        let mut a = Axes::default();
        a.set("scheme", "sack,cubic,auto").unwrap();
        a.set("delay", "10ms,20ms").unwrap();
        a.set("loss", "0,1%").unwrap();
        let list = a.expand(5, 3, &Limits::default()).unwrap();
        let e = a.expansion(5, 3, &Limits::default()).unwrap();
        assert_eq!(e.len(), 36);
        for (i, r) in list.iter().enumerate() {
            let one = e.run(i).unwrap();
            assert_eq!(one.params, r.params, "run {i}");
            assert_eq!(one.scenario.seed, r.scenario.seed, "run {i}");
            assert_eq!(
                format!("{:?}", one.scenario),
                format!("{:?}", r.scenario),
                "run {i}"
            );
        }
        // A sweep larger than the limit is refused before anything is built.
        let limits = Limits {
            max_runs: 35,
            i_know: false,
        };
        assert!(a.expansion(5, 3, &limits).is_err());
    }

    #[test]
    fn errors_name_the_field() {
        let mut a = Axes::default();
        a.set("delay", "20xs").unwrap();
        let e = a.expand(1, 1, &Limits::default()).unwrap_err();
        assert!(e.starts_with("--delay:"), "{e}");
        let mut a = Axes::default();
        a.set("bottleneck", "-5mbit").unwrap();
        assert!(a
            .expand(1, 1, &Limits::default())
            .unwrap_err()
            .starts_with("--bottleneck:"));
        let mut a = Axes::default();
        a.set("scheme", "warp").unwrap();
        assert!(a
            .expand(1, 1, &Limits::default())
            .unwrap_err()
            .contains("unknown scheme"));
    }

    #[test]
    fn toml_uses_flag_names_and_lists() {
        let a = Axes::from_toml("delay = [\"10ms\", \"20ms\"]\nflows = 4\ndelayed_ack = true\n")
            .unwrap();
        let runs = a.expand(1, 1, &Limits::default()).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].scenario.flows, 4);
        assert!(runs[0].scenario.delayed_ack);
        assert!(Axes::from_toml("delay = ").is_err());
        assert!(Axes::from_toml("warp = 9").unwrap_err().contains("unknown"));
    }

    #[test]
    fn written_toml_reads_back_to_the_same_runs() {
        let mut a = Axes::default();
        a.set("scheme", "auto,cubic").unwrap();
        a.set("ge", "0.01,0.5,0,1;0.02,0.3,0,1").unwrap();
        a.set("delay", "10ms, 50ms").unwrap();
        let b = Axes::from_toml(&a.to_toml()).unwrap();
        let params = |x: &Axes| -> Vec<Vec<(String, String)>> {
            let runs = x.expand(3, 2, &Limits::default()).unwrap();
            runs.into_iter().map(|r| r.params).collect()
        };
        assert_eq!(params(&a).len(), 16);
        assert_eq!(params(&a), params(&b));
        assert_eq!(a.to_toml(), b.to_toml());
        // A list of loss schedules (their values hold commas' cousin '/') survives a file.
        let c = Axes::from_toml("loss-schedule = [\"0.1%/10%@10s\", \"1%/5%@2s\"]").unwrap();
        assert_eq!(c.run_count(1), Some(2));
    }

    #[test]
    fn request_response_takes_one_or_two_sizes_and_excludes_other_applications() {
        let app = |v: &str| {
            let mut a = Axes::default();
            a.set("request-response", v).unwrap();
            a.expand(1, 1, &Limits::default())
                .map(|r| r[0].scenario.app)
        };
        assert_eq!(
            app("100B").unwrap(),
            App::RequestResponse {
                request: 100,
                response: 100
            }
        );
        assert_eq!(
            app("100/10KB").unwrap(),
            App::RequestResponse {
                request: 100,
                response: 10_000
            }
        );
        for bad in ["0", "100/0", "20MiB", "x"] {
            let e = app(bad).unwrap_err();
            assert!(e.starts_with("--request-response"), "{bad}: {e}");
        }
        let mut a = Axes::default();
        a.set("request-response", "100").unwrap();
        a.set("app-rate", "1mbit").unwrap();
        let e = a.expand(1, 1, &Limits::default()).unwrap_err();
        assert!(e.contains("cannot be combined"), "{e}");
    }

    #[test]
    fn run_count_is_the_product_of_the_lists_and_seeds() {
        let mut a = Axes::default();
        a.set("delay", "10ms,50ms,100ms").unwrap();
        a.set("scheme", "sack,newreno").unwrap();
        assert_eq!(a.run_count(5), Some(30));
        assert_eq!(a.run_count(u64::MAX), None);
    }

    #[test]
    fn too_many_runs_are_refused_before_expanding() {
        let mut a = Axes::default();
        a.set("delay", "10ms,50ms,100ms").unwrap();
        let limits = Limits {
            max_runs: 20,
            i_know: true,
        };
        assert_eq!(a.expand(1, 6, &limits).unwrap().len(), 18);
        let e = a.expand(1, 7, &limits).unwrap_err();
        assert!(e.contains("21 runs") && e.contains("--max-runs 21"), "{e}");
        // 2^63 seeds would be 3 * 2^63 runs; the product is checked, not wrapped.
        let e = a.expand(1, 1 << 63, &limits).unwrap_err();
        assert!(e.contains("more runs than can be counted"), "{e}");
        let e = a.expand(u64::MAX, 1, &limits).unwrap_err();
        assert!(e.starts_with("--seed:"), "{e}");
    }

    #[test]
    fn a_costly_sweep_needs_i_know() {
        // 200 runs of 220 s at 100 Mb/s: about 2.2e9 events in all, fine...
        let mut a = Axes::default();
        a.set("delay", "10ms,20ms").unwrap();
        let limits = Limits::default();
        let runs = a.expand(1, 100, &limits).unwrap();
        limits.check(&runs).unwrap();
        // ...but at 10 Gb/s, 100 times as many: 2.2e11, over the limit.
        a.set("bottleneck", "10gbit").unwrap();
        let runs = a.expand(1, 100, &limits).unwrap();
        let e = limits.check(&runs).unwrap_err();
        assert!(
            e.contains("2.2e11 simulator events") && e.contains("--i-know"),
            "{e}"
        );
        let size = SweepSize::of(&runs);
        assert_eq!(size.runs, 200);
        assert_eq!(size.sim_seconds, 200.0 * 220.0);
        Limits {
            i_know: true,
            ..limits
        }
        .check(&runs)
        .unwrap();
    }

    #[test]
    fn too_many_flow_results_need_i_know() {
        // 2 000 runs of 10 000 flows each: 2e7 per-flow results, for a 1 ms run.
        let mut a = Axes::default();
        a.set("flows", "10000").unwrap();
        a.set("topology", "dumbbell").unwrap();
        a.set("duration", "1ms").unwrap();
        a.set("bottleneck", "13kbit").unwrap();
        let limits = Limits::default();
        let runs = a.expand(1, 2000, &limits).unwrap();
        let e = limits.check(&runs).unwrap_err();
        assert!(e.contains("20000000 per-flow results"), "{e}");
    }
}
