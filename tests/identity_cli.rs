//! Key pairs and configuration files as a user meets them: `keygen --pair`, a receiver
//! started from a configuration file that lists its peers and stores each one's files
//! apart, a reload on SIGHUP that revokes a peer, trust on first use, and the systemd
//! units.

mod common;

use common::wait_event;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tcpfec"));
    c.env("TCPFEC_NO_RESUME", "1");
    c
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tcpfec-idcli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `keygen --pair --out DIR/NAME`; returns the public key (the .pub file's first field).
fn pair(dir: &Path, name: &str) -> String {
    let o = bin()
        .args(["keygen", "--pair", "--comment", name, "--out"])
        .arg(dir.join(name))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join(format!("{name}.pub"))).unwrap();
    let (key, comment) = text.trim().split_once(' ').unwrap();
    assert_eq!(comment, name);
    key.to_string()
}

/// `tcpfec send FILE ADDR --identity DIR/NAME` with `extra`.
fn send(dir: &Path, name: &str, file: &Path, addr: &str, extra: &[&str]) -> std::process::Output {
    bin()
        .arg("send")
        .arg(file)
        .arg(addr)
        .arg("--identity")
        .arg(dir.join(name))
        .args(extra)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .output()
        .unwrap()
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_configured_receiver_names_its_peers_stores_them_apart_and_revokes_on_sighup() {
    let dir = scratch("recv");
    let server = pair(&dir, "server");
    let alice = pair(&dir, "alice");
    pair(&dir, "mallory");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("alice"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the private key is the owner's alone");
    }
    let ak = dir.join("authorized_keys");
    std::fs::write(&ak, format!("# who may send\n{alice} alice\n")).unwrap();
    let out = dir.join("in");
    let config = dir.join("recv.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\nout = {:?}\nidentity = {:?}\nauthorized_keys = {:?}\nout-per-peer = true\n",
            out,
            dir.join("server"),
            ak
        ),
    )
    .unwrap();
    let mut recv = bin()
        .args(["recv", "--config"])
        .arg(&config)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(recv.stdout.take().unwrap()).lines();
    let addr = wait_event(&mut lines, "listening")["addr"]
        .as_str()
        .unwrap()
        .to_string();
    let file = dir.join("data.bin");
    std::fs::write(&file, vec![42u8; 500_000]).unwrap();
    let server_key = ["--server-key", server.as_str()];

    let o = send(&dir, "alice", &file, &addr, &server_key);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = wait_event(&mut lines, "received");
    assert_eq!(
        (v["peer"].as_str(), v["bytes"].as_u64()),
        (Some("alice"), Some(500_000))
    );
    assert_eq!(
        std::fs::read(out.join("alice").join("data.bin"))
            .unwrap()
            .len(),
        500_000
    );

    let o = send(&dir, "mallory", &file, &addr, &server_key);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not in its authorized keys"), "{err}");
    assert!(
        !out.join("mallory").exists(),
        "nothing stored for an unlisted key"
    );

    // Alice removed, the file reread on SIGHUP: she is refused from then on.
    std::fs::write(&ak, "# nobody\n").unwrap();
    // SAFETY: kill() on a child we own.
    assert_eq!(unsafe { libc::kill(recv.id() as i32, libc::SIGHUP) }, 0);
    let v = wait_event(&mut lines, "reloaded");
    assert_eq!(v["peers"], 0);
    let o = send(&dir, "alice", &file, &addr, &server_key);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A broken list keeps the old one in force and says so.
    std::fs::write(&ak, "not a key line\n").unwrap();
    assert_eq!(unsafe { libc::kill(recv.id() as i32, libc::SIGHUP) }, 0);
    let v = wait_event(&mut lines, "reload_failed");
    assert!(v["error"].as_str().unwrap().contains("line 1"), "{v}");
    stop(recv);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn trust_on_first_use_pins_the_key_and_a_changed_key_is_refused() {
    let dir = scratch("tofu");
    pair(&dir, "server");
    pair(&dir, "impostor");
    pair(&dir, "alice");
    let start = |identity: &str| {
        let mut c = bin();
        c.args([
            "recv",
            "--listen",
            "127.0.0.1:0",
            "--json",
            "--force",
            "--identity",
        ])
        .arg(dir.join(identity))
        .arg("--out")
        .arg(dir.join("in"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let addr = wait_event(&mut lines, "listening")["addr"]
            .as_str()
            .unwrap()
            .to_string();
        // Its stdout stays open (a closed pipe would fail its next event line).
        (child, addr, lines)
    };
    let file = dir.join("f");
    std::fs::write(&file, b"hello").unwrap();
    let (recv, addr, _out) = start("server");
    let o = send(&dir, "alice", &file, &addr, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--trust-on-first-use"));
    let o = send(&dir, "alice", &file, &addr, &["--trust-on-first-use"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let known = std::fs::read_to_string(dir.join("config/tcpfec/known_servers")).unwrap();
    assert!(known.starts_with(&format!("{addr} ")), "{known}");
    let o = send(&dir, "alice", &file, &addr, &[]);
    assert!(
        o.status.success(),
        "pinned now: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    stop(recv);
    // Another key at the same address: refused even with the flag (it pins only once).
    let (recv, addr2, _out) = start("impostor");
    let mut known_now = known.clone();
    known_now.push_str(&known.replace(&addr, &addr2));
    std::fs::write(dir.join("config/tcpfec/known_servers"), known_now).unwrap();
    let o = send(&dir, "alice", &file, &addr2, &["--trust-on-first-use"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not the one pinned"), "{err}");
    stop(recv);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn configuration_mistakes_are_one_line_errors() {
    let dir = scratch("conf");
    for (text, want) in [
        ("lisen = \"x\"\n", "line 1: unknown key 'lisen'"),
        (
            "listen = \"127.0.0.1:0\"\nout = \"/tmp\"\ninsecure = \"yes\"\n",
            "line 3: key 'insecure': give true or false",
        ),
        ("listen = \n", "line 1:"),
    ] {
        let f = dir.join("c.toml");
        std::fs::write(&f, text).unwrap();
        let o = bin().args(["recv", "--config"]).arg(&f).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{text:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{text:?}: {err}");
    }
    // The examples shipped with the units parse as the commands' flags.
    for (cmd, file) in [
        (&["recv"][..], "recv-example.toml"),
        (&["tunnel", "server"][..], "tunnel-example.toml"),
    ] {
        let f = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("deploy/systemd")
            .join(file);
        let o = bin().args(cmd).arg("--config").arg(&f).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        // They name key files of a real installation: parsing passes, reading them fails.
        assert!(err.contains("/etc/tcpfec/server"), "{file}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_systemd_units_verify_without_warnings() {
    let Ok(probe) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("SKIPPED: systemd-analyze is not installed; the units are not verified");
        return;
    };
    assert!(probe.status.success());
    let dir = scratch("units");
    let man = dir.join("man/man1");
    let o = bin().arg("man").arg("--out").arg(&man).output().unwrap();
    assert!(o.status.success());
    assert!(man.join("tcpfec-tunnel-server.1").exists());
    let units = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/systemd");
    let mut args = vec![];
    for unit in ["tcpfec-recv@.service", "tcpfec-tunnel@.service"] {
        let text = std::fs::read_to_string(units.join(unit)).unwrap();
        assert!(
            text.contains("ExecReload=/bin/kill -HUP $MAINPID"),
            "{unit}"
        );
        assert!(text.contains("ProtectSystem=strict") && text.contains("NoNewPrivileges=yes"));
        // An instance, with the binary under test in place of the installed one.
        let instance = dir.join(unit.replace("@.", "@test."));
        std::fs::write(
            &instance,
            text.replace("/usr/local/bin/tcpfec", env!("CARGO_BIN_EXE_tcpfec")),
        )
        .unwrap();
        args.push(instance);
    }
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .args(&args)
        .env("MANPATH", dir.join("man"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.trim().is_empty(), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
