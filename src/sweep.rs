//! Turns flags and TOML into a list of runs: every axis may hold a comma-separated list,
//! and the runs are the cartesian product of all axes times the seeds.

use core::time::Duration;
use std::collections::BTreeMap;
use tcpfec_proto::Scheme;
use tcpfec_sim::units::{parse_duration, parse_probability, parse_range, parse_rate, parse_size};
use tcpfec_sim::{App, LossSpec, Scenario, Start, Topology};

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
    ("packet-size", Some("1500")),
    ("loss", Some("0.05%")),
    ("ge", None),
    ("loss-reverse", Some("0")),
    ("ge-reverse", None),
    ("delayed-ack", Some("off")),
    ("initial-window", Some("2")),
    ("min-rto", Some("200ms")),
    ("duration", Some("220s")),
    ("window", None),
    ("transfer", None),
    ("start", Some("0s")),
    ("max-window", None),
    ("loss-schedule", None),
    ("app-rate", None),
    ("target-rate", None),
    ("background", None),
    ("background-direction", None),
];

/// Values given for each axis (a list each), before expansion.
#[derive(Debug, Clone, Default)]
pub struct Axes {
    values: BTreeMap<String, Vec<String>>,
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
        let sep = if axis.starts_with("ge") || axis == "loss-schedule" {
            ';'
        } else {
            ','
        };
        let list: Vec<String> = raw
            .split(sep)
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
            let sep = if axis.starts_with("ge") { ";" } else { "," };
            axes.set(&axis, &strings.join(sep))?;
        }
        Ok(axes)
    }

    /// Forgets an axis, so that another source can set it (or a conflicting one).
    pub fn clear(&mut self, axis: &str) {
        self.values.remove(axis);
    }

    /// Overlays `other` (later wins).
    pub fn merge(&mut self, other: Axes) {
        self.values.extend(other.values);
    }

    /// Expands into runs: cartesian product of all axes, each with seeds `seed..seed+seeds`.
    pub fn expand(&self, seed: u64, seeds: u64) -> Result<Vec<Run>, String> {
        if seeds == 0 {
            return Err("--seeds: must be at least 1".into());
        }
        if self.has("ge") && self.has("loss") {
            return Err("--ge and --loss both set: give one loss model".into());
        }
        if self.has("ge-reverse") && self.has("loss-reverse") {
            return Err("--ge-reverse and --loss-reverse both set: give one loss model".into());
        }
        let mut points: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for (axis, default) in AXES {
            let vals: Vec<String> = match (self.values.get(*axis), default) {
                (Some(v), _) => v.clone(),
                (None, Some(d)) => vec![d.to_string()],
                (None, None) => continue,
            };
            points = points
                .into_iter()
                .flat_map(|p| {
                    vals.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push((axis.to_string(), v.clone()));
                        q
                    })
                })
                .collect();
        }
        let mut runs = Vec::new();
        for params in points {
            let base = scenario_of(&params)?;
            for s in seed..seed + seeds {
                let mut scenario = base.clone();
                scenario.seed = s;
                runs.push(Run {
                    params: params.clone(),
                    scenario,
                });
            }
        }
        Ok(runs)
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
            "packet-size" => sc.packet_size = field(a, parse_count(v))?,
            "loss" => sc.loss = LossSpec::bernoulli(field(a, parse_probability(v))?),
            "ge" => sc.loss = field(a, LossSpec::parse_ge(v))?,
            "loss-reverse" => {
                sc.reverse_loss = LossSpec::bernoulli(field(a, parse_probability(v))?)
            }
            "ge-reverse" => sc.reverse_loss = field(a, LossSpec::parse_ge(v))?,
            "delayed-ack" => sc.delayed_ack = field(a, parse_on_off(v))?,
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
            "app-rate" => {
                sc.app = App::Rate {
                    bps: field(a, parse_rate(v))?,
                }
            }
            _ => return Err(format!("unknown setting '{axis}'")),
        }
    }
    if get("transfer").is_some() && get("app-rate").is_some() {
        return Err("--app-rate: cannot be combined with --transfer".into());
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
        let runs = a.expand(1, 2).unwrap();
        assert_eq!(runs.len(), 12);
        assert_eq!(a.swept(), vec!["scheme".to_string(), "delay".to_string()]);
        assert_eq!(runs[0].scenario.delay, Duration::from_millis(10));
        assert_eq!(runs[1].scenario.seed, 2);
    }

    #[test]
    fn errors_name_the_field() {
        let mut a = Axes::default();
        a.set("delay", "20xs").unwrap();
        let e = a.expand(1, 1).unwrap_err();
        assert!(e.starts_with("--delay:"), "{e}");
        let mut a = Axes::default();
        a.set("bottleneck", "-5mbit").unwrap();
        assert!(a.expand(1, 1).unwrap_err().starts_with("--bottleneck:"));
        let mut a = Axes::default();
        a.set("scheme", "warp").unwrap();
        assert!(a.expand(1, 1).unwrap_err().contains("unknown scheme"));
    }

    #[test]
    fn toml_uses_flag_names_and_lists() {
        let a = Axes::from_toml("delay = [\"10ms\", \"20ms\"]\nflows = 4\ndelayed_ack = true\n")
            .unwrap();
        let runs = a.expand(1, 1).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].scenario.flows, 4);
        assert!(runs[0].scenario.delayed_ack);
        assert!(Axes::from_toml("delay = ").is_err());
        assert!(Axes::from_toml("warp = 9").unwrap_err().contains("unknown"));
    }
}
