//! Parsing of the human units used in scenarios: durations, rates, probabilities, sizes.
//! Every parser returns a message that says what was expected, for one-line CLI errors.

use core::time::Duration;

fn split_number(s: &str) -> Result<(f64, String), String> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .map_or(s.len(), |(i, _)| i);
    let (num, unit) = s.split_at(end);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' does not start with a number"))?;
    if !v.is_finite() {
        return Err(format!("'{s}' is not a finite number"));
    }
    Ok((v, unit.trim().to_ascii_lowercase()))
}

/// Parses a duration such as `200ms`, `1.5s`, `10us`, `2min`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (v, unit) = split_number(s)?;
    if v < 0.0 {
        return Err(format!("'{s}' is negative; a duration must be >= 0"));
    }
    let scale = match unit.as_str() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "min" | "m" => 60.0,
        "" => return Err(format!("'{s}' has no unit (write e.g. 200ms or 1.5s)")),
        _ => {
            return Err(format!(
                "'{s}': unknown time unit '{unit}' (ns, us, ms, s, min)"
            ))
        }
    };
    Duration::try_from_secs_f64(v * scale)
        .map_err(|_| format!("'{s}' is too long to be a duration"))
}

/// Parses a bit rate such as `100mbit`, `50Mbps`, `1gbit`, `500kbit`, `9600bit`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (v, unit) = split_number(s)?;
    if v <= 0.0 {
        return Err(format!("'{s}': a rate must be positive"));
    }
    let scale = match unit.as_str() {
        "bit" | "bps" | "b/s" => 1.0,
        "kbit" | "kbps" | "kb/s" => 1e3,
        "mbit" | "mbps" | "mb/s" => 1e6,
        "gbit" | "gbps" | "gb/s" => 1e9,
        "" => return Err(format!("'{s}' has no unit (write e.g. 100mbit)")),
        _ => {
            return Err(format!(
                "'{s}': unknown rate unit '{unit}' (bit, kbit, mbit, gbit)"
            ))
        }
    };
    let bps = v * scale;
    if !(1.0..=1e13).contains(&bps) {
        return Err(format!("'{s}' is outside 1 bit/s .. 10 Tbit/s"));
    }
    Ok(bps.round() as u64)
}

/// Parses a probability written as a percentage (`0.05%`) or a fraction (`0.0005`).
pub fn parse_probability(s: &str) -> Result<f64, String> {
    let (v, unit) = split_number(s)?;
    let p = match unit.as_str() {
        "%" => v / 100.0,
        "" => v,
        _ => {
            return Err(format!(
                "'{s}': write a fraction (0.01) or a percentage (1%)"
            ))
        }
    };
    if !(0.0..=1.0).contains(&p) {
        return Err(format!(
            "'{s}' is not a probability between 0 and 1 (0% .. 100%)"
        ));
    }
    Ok(p)
}

/// Parses a byte size such as `1500`, `1080KiB`, `50MB`, `4GiB`; the short forms `K`,
/// `M`, `G`, `T` are the decimal units (as iperf3 writes them).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (v, unit) = split_number(s)?;
    if v < 0.0 {
        return Err(format!("'{s}' is negative"));
    }
    let scale = match unit.as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" => 1e12,
        "tib" => 1024f64.powi(4),
        _ => {
            return Err(format!(
                "'{s}': unknown size unit '{unit}' (B, KB, KiB, MB, MiB, GB, GiB, TB, TiB)"
            ))
        }
    };
    Ok((v * scale).round() as u64)
}

/// Parses `A..B` into two values with `each`, requiring A <= B.
pub fn parse_range<T: PartialOrd + Copy>(
    s: &str,
    each: impl Fn(&str) -> Result<T, String>,
) -> Result<(T, T), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("'{s}' is not a range (write A..B, e.g. 20s..220s)"))?;
    let (a, b) = (each(a)?, each(b)?);
    if a > b {
        return Err(format!("'{s}': the range ends before it starts"));
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("200ms").unwrap(), Duration::from_millis(200));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("20").is_err());
        assert!(parse_duration("-5ms").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        // Beyond what a Duration holds: an error, not a panic.
        assert!(parse_duration("99999999999999999999999s").is_err());
        // Found by the config fuzz target too.
        assert!(parse_duration("99999999999999999999min").is_err());
        assert_eq!(parse_rate("100mbit").unwrap(), 100_000_000);
        assert_eq!(parse_rate("50Mbps").unwrap(), 50_000_000);
        assert!(parse_rate("-1mbit").is_err());
        assert!((parse_probability("0.05%").unwrap() - 0.0005).abs() < 1e-15);
        assert_eq!(parse_probability("0.02").unwrap(), 0.02);
        assert!(parse_probability("120%").is_err());
        assert_eq!(parse_size("1080KiB").unwrap(), 1080 * 1024);
        assert_eq!(
            parse_range("20s..220s", parse_duration).unwrap(),
            (Duration::from_secs(20), Duration::from_secs(220))
        );
        assert!(parse_range("5s..1s", parse_duration).is_err());
    }
}
