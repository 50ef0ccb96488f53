//! Network namespaces and TUN devices for the link emulator: create a namespace, open a
//! TUN device inside it, and run code (such as opening a socket) inside it from this
//! process. Linux only, and it needs root (`CAP_SYS_ADMIN` and `CAP_NET_ADMIN`).

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;

/// A named network namespace this process created; dropping it deletes it.
#[derive(Debug)]
pub struct Namespace {
    name: String,
}

impl Namespace {
    /// Creates namespace `name` (as `ip netns add` does) with its loopback up. Refuses a
    /// name that exists: it may belong to another emulator.
    pub fn create(name: &str) -> io::Result<Namespace> {
        if std::path::Path::new("/run/netns").join(name).exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "network namespace {name} exists (another emulator running? `ip netns del {name}` removes it)"
                ),
            ));
        }
        ip(&["netns", "add", name])?;
        let ns = Namespace {
            name: name.to_string(),
        };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// The namespace's name (for `ip netns exec NAME …`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `ip -n NAME ARGS…`.
    pub fn ip(&self, args: &[&str]) -> io::Result<()> {
        let mut v = vec!["-n", self.name.as_str()];
        v.extend_from_slice(args);
        ip(&v)
    }

    /// Runs `f` on a thread that has entered this namespace, and returns its result.
    /// Sockets and devices `f` creates belong to the namespace for their whole life,
    /// whichever thread uses them later.
    pub fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        let path = std::path::Path::new("/run/netns").join(&self.name);
        let ns = File::open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        std::thread::spawn(move || {
            // SAFETY: setns on a namespace descriptor we own; it changes only this
            // short-lived thread's network namespace.
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            f()
        })
        .join()
        .map_err(|_| io::Error::other("namespace thread panicked"))?
    }

    /// Sets a sysctl of this namespace's network stack, e.g. `net/ipv4/tcp_wmem` (the path
    /// under `/proc/sys`): network sysctls are per namespace, read through the writer's.
    pub fn sysctl(&self, key: &str, value: &str) -> io::Result<()> {
        let path = std::path::Path::new("/proc/sys").join(key);
        let value = value.to_string();
        self.run(move || {
            std::fs::write(&path, value)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
        })
    }

    /// Opens a TUN device named `dev` in this namespace (IP packets, no packet-info
    /// header), non-blocking. The device lives as long as the descriptor.
    pub fn open_tun(&self, dev: &str) -> io::Result<OwnedFd> {
        let dev = dev.to_string();
        self.run(move || open_tun(&dev))
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// Runs `ip ARGS…`, with its error output in the error.
fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run `ip` (iproute2): {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let kind = if err.contains("Operation not permitted") || err.contains("Permission denied") {
        io::ErrorKind::PermissionDenied
    } else {
        io::ErrorKind::Other
    };
    Err(io::Error::new(
        kind,
        format!("ip {}: {err}", args.join(" ")),
    ))
}

/// `TUNSETIFF` from linux/if_tun.h.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// `struct ifreq` as TUNSETIFF reads it: the name, then the flags (the union is larger).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Opens a TUN device in the calling thread's namespace.
fn open_tun(dev: &str) -> io::Result<OwnedFd> {
    if dev.is_empty() || dev.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "device name of 1-15 bytes",
        ));
    }
    let path = c"/dev/net/tun";
    // SAFETY: opening a path given as a NUL-terminated string.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("/dev/net/tun: {e}")));
    }
    // SAFETY: fd was just opened and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TUN | IFF_NO_PI,
        _pad: [0; 22],
    };
    req.name[..dev.len()].copy_from_slice(dev.as_bytes());
    // SAFETY: TUNSETIFF reads an ifreq, which `req` is laid out as, and it outlives the call.
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req) } < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("TUNSETIFF {dev}: {e}")));
    }
    Ok(fd)
}

/// True if this process may create namespaces (it runs as root); the emulator and its
/// tests check this first to say clearly why they cannot run.
pub fn privileged() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
