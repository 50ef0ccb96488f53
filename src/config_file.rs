//! `--config FILE` for the long-running commands (`recv`, `tunnel server|client`, `relay`,
//! `perf`): a TOML file whose keys are the command's long flag names, expanded into flags
//! before the command line is parsed. A flag given on the command line wins over the
//! file. Every error is one line naming the file (and the line, where there is one); the
//! process then exits with status 2, as for any bad flag.
//!
//! ```toml
//! listen = "0.0.0.0:7000"
//! out = "/srv/incoming"
//! identity = "/etc/tcpfec/server"
//! authorized-keys = "/etc/tcpfec/authorized_keys"   # or authorized_keys
//! threads = 4
//! out-per-peer = true
//! ```

use clap::{ArgAction, Command};
use std::ffi::OsString;
use std::path::Path;

/// The commands that take `--config`, as their paths of subcommand names.
pub const COMMANDS: &[&[&str]] = &[
    &["recv"],
    &["tunnel", "server"],
    &["tunnel", "client"],
    &["relay"],
    &["perf"],
];

/// `argv` with the flags of the `--config` file it names (if any) added after it.
pub fn expand(argv: Vec<OsString>, cli: &Command) -> Result<Vec<OsString>, String> {
    let text: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let Some((at, path)) = config_flag(&text)? else {
        return Ok(argv);
    };
    let (cmd, names) = subcommand(cli, &text[1..at]);
    if !COMMANDS.contains(&names.as_slice()) {
        // Another command's own --config (`sim --config` reads a scenario): not ours.
        return Ok(argv);
    }
    let flags = flags_from_file(Path::new(&path), cmd, &names.join(" "), &text)?;
    let mut out = argv;
    let after = if text[at].contains('=') {
        at + 1
    } else {
        at + 2
    };
    out.splice(after..after, flags.into_iter().map(OsString::from));
    Ok(out)
}

/// Where `--config` is and the path it names.
fn config_flag(args: &[String]) -> Result<Option<(usize, String)>, String> {
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        if a == "--" {
            break;
        }
        let path = if a == "--config" {
            args.get(i + 1)
                .cloned()
                .ok_or("--config: give the path of a TOML file")?
        } else if let Some(p) = a.strip_prefix("--config=") {
            p.to_string()
        } else {
            continue;
        };
        if found.is_some() {
            return Err("--config: give one configuration file".into());
        }
        found = Some((i, path));
    }
    Ok(found)
}

/// The deepest subcommand the leading words of `args` name, and the names on the way.
fn subcommand<'a>(cli: &'a Command, args: &[String]) -> (&'a Command, Vec<&'a str>) {
    let mut cmd = cli;
    let mut names = Vec::new();
    for a in args {
        match cmd.find_subcommand(a) {
            Some(sub) => {
                cmd = sub;
                names.push(sub.get_name());
            }
            None if a.starts_with('-') => continue,
            None => break,
        }
    }
    (cmd, names)
}

/// The flags the file at `path` sets for `cmd`, leaving out those `given` on the command
/// line.
fn flags_from_file(
    path: &Path,
    cmd: &Command,
    name: &str,
    given: &[String],
) -> Result<Vec<String>, String> {
    let at = |line: Option<usize>| match line {
        Some(n) => format!("--config {} line {n}", path.display()),
        None => format!("--config {}", path.display()),
    };
    let text =
        tcpfec_lab::sweep::read_settings_file(path).map_err(|e| format!("{}: {e}", at(None)))?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
        let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
        format!("{}: {message}", at(line))
    })?;
    let mut flags = Vec::new();
    for (key, value) in &table {
        let long = key.replace('_', "-");
        let line = key_line(&text, key);
        let Some(arg) = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(long.as_str()) && long != "config")
        else {
            let known: Vec<&str> = cmd
                .get_arguments()
                .filter_map(|a| a.get_long())
                .filter(|l| !["config", "help"].contains(l))
                .collect();
            return Err(format!(
                "{}: unknown key '{key}' (`tcpfec {name}` takes: {})",
                at(line),
                known.join(", ")
            ));
        };
        let short = arg.get_short().map(|c| format!("-{c}"));
        let on_command_line = given.iter().any(|g| {
            g == &format!("--{long}")
                || g.starts_with(&format!("--{long}="))
                || short.as_deref() == Some(g.as_str())
        });
        if on_command_line {
            continue;
        }
        let many =
            matches!(arg.get_action(), ArgAction::Append) || arg.get_value_delimiter().is_some();
        let bad = |what: &str| format!("{}: key '{key}': {what}", at(line));
        match (arg.get_action(), value) {
            (ArgAction::SetTrue, toml::Value::Boolean(true)) => flags.push(format!("--{long}")),
            (ArgAction::SetTrue, toml::Value::Boolean(false)) => {}
            (ArgAction::SetTrue, _) => return Err(bad("give true or false")),
            (_, toml::Value::Array(items)) if many => {
                for item in items {
                    flags.push(format!(
                        "--{long}={}",
                        scalar(item).ok_or_else(|| bad("give a list of strings or numbers"))?
                    ));
                }
            }
            (_, toml::Value::Array(_)) => return Err(bad("takes one value, not a list")),
            (_, v) => {
                let s = scalar(v).ok_or_else(|| bad("give a string, a number or true"))?;
                flags.push(format!("--{long}={s}"));
            }
        }
    }
    Ok(flags)
}

/// A TOML string, integer or float as the flag would take it.
fn scalar(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

/// The line `key = …` is on (for errors).
fn key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix(key).or_else(|| {
                l.strip_prefix('"')
                    .and_then(|r| r.strip_prefix(key))
                    .and_then(|r| r.strip_prefix('"'))
            });
            l.is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction};

    fn cli() -> Command {
        Command::new("tcpfec")
            .subcommand(
                Command::new("recv")
                    .arg(Arg::new("config").long("config"))
                    .arg(Arg::new("listen").long("listen"))
                    .arg(Arg::new("out").long("out"))
                    .arg(Arg::new("threads").long("threads"))
                    .arg(Arg::new("force").long("force").action(ArgAction::SetTrue))
                    .arg(Arg::new("authorized-keys").long("authorized-keys")),
            )
            .subcommand(
                Command::new("tunnel").subcommand(
                    Command::new("server")
                        .arg(Arg::new("config").long("config"))
                        .arg(
                            Arg::new("allow-peer")
                                .long("allow-peer")
                                .action(ArgAction::Append),
                        ),
                ),
            )
            .subcommand(Command::new("sim").arg(Arg::new("config").long("config")))
    }

    fn file(name: &str, text: &str) -> String {
        let p = std::env::temp_dir().join(format!("tcpfec-cfg-{}-{name}.toml", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    fn args(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    fn strings(v: Vec<OsString>) -> Vec<String> {
        v.into_iter().map(|a| a.into_string().unwrap()).collect()
    }

    #[test]
    fn keys_become_flags_and_the_command_line_wins() {
        let f = file(
            "ok",
            "listen = \"0.0.0.0:7000\"\nout = \"/srv\"\nthreads = 4\nforce = true\nauthorized_keys = \"/etc/ak\"\n",
        );
        let got = strings(
            expand(
                args(&["tcpfec", "recv", "--config", &f, "--out", "/tmp"]),
                &cli(),
            )
            .unwrap(),
        );
        assert_eq!(&got[..4], ["tcpfec", "recv", "--config", f.as_str()]);
        assert!(
            got.contains(&"--listen=0.0.0.0:7000".to_string()),
            "{got:?}"
        );
        assert!(got.contains(&"--threads=4".to_string()));
        assert!(got.contains(&"--force".to_string()));
        assert!(
            got.contains(&"--authorized-keys=/etc/ak".to_string()),
            "underscores accepted"
        );
        assert!(
            !got.iter().any(|a| a == "--out=/srv"),
            "the command line's --out wins"
        );
        let parsed = cli().try_get_matches_from(&got).unwrap();
        let recv = parsed.subcommand_matches("recv").unwrap();
        assert_eq!(recv.get_one::<String>("out").unwrap(), "/tmp");
    }

    #[test]
    fn lists_repeat_a_flag_that_takes_many() {
        let f = file("list", "allow-peer = [\"alice\", \"bob\"]\n");
        let got = strings(
            expand(
                args(&["tcpfec", "tunnel", "server", "--config", &f]),
                &cli(),
            )
            .unwrap(),
        );
        assert_eq!(&got[5..], ["--allow-peer=alice", "--allow-peer=bob"]);
    }

    #[test]
    fn mistakes_are_one_line_errors_naming_file_and_line() {
        for (text, want) in [
            ("listen = \"x\"\nlisen = \"y\"\n", "line 2: unknown key 'lisen' (`tcpfec recv` takes: listen, out, threads, force, authorized-keys)"),
            ("force = 1\n", "line 1: key 'force': give true or false"),
            ("listen = [\"a\"]\n", "key 'listen': takes one value, not a list"),
            ("listen = \"a\"\nout = \n", "line 2: "),
            ("[server]\nlisten = 1\n", "key 'server'"),
            ("config = \"other\"\n", "unknown key 'config'"),
        ] {
            let f = file("bad", text);
            let e = expand(args(&["tcpfec", "recv", "--config", &f]), &cli()).unwrap_err();
            assert!(e.contains(want) && !e.contains('\n'), "{text:?}: {e}");
            assert!(e.starts_with(&format!("--config {f}")), "{e}");
        }
        let sim = args(&["tcpfec", "sim", "--config", "x"]);
        assert_eq!(
            expand(sim.clone(), &cli()).unwrap(),
            sim,
            "sim reads its own --config"
        );
        let e = expand(
            args(&["tcpfec", "recv", "--config", "/nonexistent/x.toml"]),
            &cli(),
        )
        .unwrap_err();
        assert!(e.contains("/nonexistent/x.toml"), "{e}");
        let plain = args(&["tcpfec", "recv", "--listen", "a"]);
        assert_eq!(
            expand(plain.clone(), &cli()).unwrap(),
            plain,
            "no --config: unchanged"
        );
    }
}
