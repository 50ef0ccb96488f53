//! Child processes of the benchmarks: started with their first line of output read (the
//! line where a server says where it listens), killed when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Kills a child process when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns `cmd` and reads its first stdout line; the rest stays in the pipe for the
/// caller, who must read it if the child writes more than the pipe holds.
pub fn spawn_with_line(mut cmd: Command) -> Result<(Killed, String), String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("piped"))
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    Ok((Killed(child), line))
}

/// Spawns `cmd` and reads its first stdout line; the rest of its output is read and
/// dropped, so a server that reports every test never blocks on a full pipe and stalls
/// the benchmark.
pub fn spawn_with_line_rest_dropped(cmd: Command) -> Result<(Killed, String), String> {
    let (mut child, line) = spawn_with_line(cmd)?;
    if let Some(mut out) = child.0.stdout.take() {
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    }
    Ok((child, line))
}
