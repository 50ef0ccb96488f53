//! The link emulator: two network namespaces joined by a link in user space that carries
//! any IP traffic (kernel TCP as well as tcpfec's UDP), with the relay's link model —
//! rate, one-way delay, drop-tail queue, Bernoulli or Gilbert–Elliott loss — applied
//! each way. It needs no `tc netem`: each namespace gets a TUN device, and a thread per
//! direction reads packets from one device, runs them through a [`LinkModel`] and
//! writes them into the other when due.
//!
//! Side `a` has address [`ADDR_A`], side `b` [`ADDR_B`]; run programs in them with
//! `ip netns exec NAME …`, or open sockets in them with [`Namespace::run`]. Linux only,
//! and root only.

pub mod netns;

use crate::link::{DirCounts, DirStats, LinkModel, LinkSpec};
pub use netns::{privileged, Namespace};
use std::collections::VecDeque;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tcpfec_channel::Rng;

/// Side a's address.
pub const ADDR_A: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// Side b's address.
pub const ADDR_B: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
/// The TUN device's name in each namespace.
pub const DEVICE: &str = "tfemu0";
/// MTU of the emulated link (Ethernet's).
pub const MTU: u32 = 1500;
/// Longest a direction's thread sleeps before it looks at its stop flag again.
const TICK: Duration = Duration::from_millis(10);

/// The emulated path.
#[derive(Debug, Clone)]
pub struct EmuConfig {
    /// Namespaces are `NAME-a` and `NAME-b`.
    pub name: String,
    /// a → b.
    pub forward: LinkSpec,
    /// b → a.
    pub back: LinkSpec,
    /// Seed of the loss models.
    pub seed: u64,
}

/// A running emulator; dropping it stops the link and deletes the namespaces.
pub struct Emulator {
    /// Side a's namespace.
    pub a: Namespace,
    /// Side b's namespace.
    pub b: Namespace,
    /// a → b counters.
    pub forward: Arc<DirStats>,
    /// b → a counters.
    pub back: Arc<DirStats>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Emulator {
    /// Creates the namespaces and devices and starts the link. Fails with
    /// `PermissionDenied` without root, `AlreadyExists` if the namespaces exist.
    pub fn start(cfg: &EmuConfig) -> io::Result<Emulator> {
        if !privileged() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the link emulator needs root (it creates network namespaces and TUN devices)",
            ));
        }
        let a = Namespace::create(&format!("{}-a", cfg.name))?;
        let b = Namespace::create(&format!("{}-b", cfg.name))?;
        let fa = setup_side(&a, ADDR_A)?;
        let fb = setup_side(&b, ADDR_B)?;
        for ns in [&a, &b] {
            tune_kernel_tcp(ns)?;
        }
        let fa = Arc::new(fa);
        let fb = Arc::new(fb);
        let forward = Arc::new(DirStats::default());
        let back = Arc::new(DirStats::default());
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for (from, to, spec, stats, stream) in [
            (fa.clone(), fb.clone(), cfg.forward, forward.clone(), 1),
            (fb, fa, cfg.back, back.clone(), 2),
        ] {
            let stop = stop.clone();
            let model = LinkModel::new(spec, Rng::new(cfg.seed, stream), 0, Instant::now());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("emu-link-{stream}"))
                    .spawn(move || run_direction(&from, &to, model, &stats, &stop))?,
            );
        }
        Ok(Emulator {
            a,
            b,
            forward,
            back,
            stop,
            threads,
        })
    }

    /// Counters (a → b, b → a).
    pub fn counts(&self) -> (DirCounts, DirCounts) {
        (self.forward.snapshot(), self.back.snapshot())
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // The namespaces delete themselves as the fields drop.
    }
}

/// Kernel TCP's host settings that would otherwise decide a measurement instead of the
/// link: socket buffers that let one connection fill a long path's queue (up to 64 MiB;
/// the defaults of a new namespace stop the send buffer at 4 MiB, below the window a
/// CUBIC flow reaches at RTT 300 ms with a 4 BDP queue at 50 Mb/s), and no metrics cache,
/// so every connection starts afresh (else a connection inherits the slow-start threshold
/// of the one before it to the same address, and a 10 MB run after a bulk one leaves
/// slow start early).
fn tune_kernel_tcp(ns: &Namespace) -> io::Result<()> {
    ns.sysctl("net/ipv4/tcp_no_metrics_save", "1")?;
    ns.sysctl("net/ipv4/tcp_rmem", "4096 131072 67108864")?;
    ns.sysctl("net/ipv4/tcp_wmem", "4096 16384 67108864")
}

/// Opens side's TUN device and gives it its address.
fn setup_side(ns: &Namespace, addr: Ipv4Addr) -> io::Result<OwnedFd> {
    let fd = ns.open_tun(DEVICE)?;
    let mtu = MTU.to_string();
    ns.ip(&["addr", "add", &format!("{addr}/24"), "dev", DEVICE])?;
    // No IPv6 link-local address: the kernel would send its own solicitations and
    // reports over the link, noise in the counters (best effort: old kernels lack it).
    let _ = ns.ip(&["link", "set", "dev", DEVICE, "addrgenmode", "none"]);
    // A long device queue: while the link thread is busy, the kernel queues rather than
    // drops; the emulated queue is the one that decides.
    ns.ip(&[
        "link",
        "set",
        "dev",
        DEVICE,
        "mtu",
        &mtu,
        "txqueuelen",
        "10000",
        "up",
    ])?;
    Ok(fd)
}

/// One direction: reads packets from `from`, admits them to the link, writes them to
/// `to` when due. Delivery times never decrease (a FIFO queue then a constant delay), so
/// a FIFO holds what is in flight.
fn run_direction(
    from: &OwnedFd,
    to: &OwnedFd,
    mut link: LinkModel,
    stats: &DirStats,
    stop: &AtomicBool,
) {
    let mut flight: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    // Buffers of delivered packets, reused for arriving ones: no allocation per packet.
    let mut spare: Vec<Vec<u8>> = Vec::new();
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        while flight.front().is_some_and(|(t, _)| *t <= now) {
            let (_, p) = flight.pop_front().expect("non-empty");
            link.release(p.len());
            // SAFETY: writing a buffer we own to a descriptor we hold open.
            let n =
                unsafe { libc::write(to.as_raw_fd(), p.as_ptr() as *const libc::c_void, p.len()) };
            if n == p.len() as isize {
                stats.on_delivered(p.len());
            }
            spare.push(p);
        }
        let wait = flight
            .front()
            .map_or(TICK, |(t, _)| t.saturating_duration_since(now))
            .min(TICK);
        if !readable(from, wait) {
            continue;
        }
        let now = Instant::now();
        for _ in 0..256 {
            // SAFETY: reading into a buffer we own, of its length.
            let n = unsafe {
                libc::read(
                    from.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                )
            };
            if n <= 0 {
                break;
            }
            let n = n as usize;
            stats.on_received(n);
            if let Some(at) = link.admit(now, n, stats) {
                let mut p = spare.pop().unwrap_or_default();
                p.clear();
                p.extend_from_slice(&buf[..n]);
                flight.push_back((at, p));
            }
        }
    }
}

/// Waits up to `wait` (with microsecond precision) for `fd` to be readable.
fn readable(fd: &OwnedFd, wait: Duration) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: wait.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one pollfd and a timespec that outlive the call; no signal mask change.
    let r = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
    r > 0 && p.revents & libc::POLLIN != 0
}
