//! UDP generic segmentation offload (Linux `UDP_SEGMENT`): one `sendmsg` hands the kernel a
//! run of equal-sized datagrams for the same peer, which it splits as late as possible.
//! The per-datagram cost of the kernel's send path is the largest item in the loopback
//! profile; batching amortises it. Elsewhere, or when the kernel refuses, datagrams go one
//! by one.

use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::UdpSocket;

/// Most segments per call (the kernel's `UDP_MAX_SEGMENTS`).
pub const MAX_SEGMENTS: usize = 64;
/// Largest total payload of one call: an IPv4 packet's 65535 less IP and UDP headers.
pub const MAX_TOTAL: usize = 65_507;

/// Whether the kernel took our segmented sends so far; cleared at the first refusal.
static SUPPORTED: AtomicBool = AtomicBool::new(cfg!(target_os = "linux"));

/// Set in the environment (to anything), turns GSO off, as [`crate::gro::ENV_OFF`] does
/// GRO.
pub const ENV_OFF: &str = "TCPFEC_NO_GSO";

/// True while segmented sends are in use.
pub fn enabled() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    SUPPORTED.load(Ordering::Relaxed) && !*OFF.get_or_init(|| std::env::var_os(ENV_OFF).is_some())
}

/// Sends `datagrams`, each `seg` bytes but the last (which may be shorter), to `to`. The
/// kernel gathers them from where they lie (one `iovec` each), so they are not copied
/// into one buffer first. Falls back to one send per datagram if the kernel does not
/// support segmentation.
pub async fn send_run(
    sock: &UdpSocket,
    to: SocketAddr,
    datagrams: &[IoSlice<'_>],
    seg: usize,
) -> io::Result<()> {
    if datagrams.len() > 1 && enabled() {
        match send_segmented(sock, to, datagrams, seg).await {
            Ok(()) => return Ok(()),
            Err(e) if refused(&e) => SUPPORTED.store(false, Ordering::Relaxed),
            Err(e) => return Err(e),
        }
    }
    for d in datagrams {
        // A failed datagram is a lost packet to the engine; keep sending the rest.
        let _ = sock.send_to(d, to).await;
    }
    Ok(())
}

fn refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL) | Some(libc::EIO) | Some(libc::ENOPROTOOPT) | Some(libc::EOPNOTSUPP)
    )
}

#[cfg(target_os = "linux")]
async fn send_segmented(
    sock: &UdpSocket,
    to: SocketAddr,
    datagrams: &[IoSlice<'_>],
    seg: usize,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    const SOL_UDP: libc::c_int = 17;
    const UDP_SEGMENT: libc::c_int = 103;
    let addr = socket2::SockAddr::from(to);
    let fd = sock.as_raw_fd();
    let seg16 = u16::try_from(seg).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    loop {
        sock.writable().await?;
        let r = sock.try_io(tokio::io::Interest::WRITABLE, || {
            // u64 storage keeps the control buffer aligned for cmsghdr.
            let mut control = [0u64; 8];
            // SAFETY: every pointer in msg refers to live data (addr, the datagrams,
            // control) for the duration of the sendmsg call; `IoSlice` is ABI-compatible
            // with `iovec` on Unix, and sendmsg only reads the slices; the control buffer
            // is large enough for one cmsg carrying a u16 (CMSG_SPACE(2) = 24 bytes on
            // 64-bit, we have 64).
            unsafe {
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_name = addr.as_ptr() as *mut libc::c_void;
                msg.msg_namelen = addr.len();
                msg.msg_iov = datagrams.as_ptr() as *mut libc::iovec;
                msg.msg_iovlen = datagrams.len() as _;
                msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
                msg.msg_controllen = libc::CMSG_SPACE(2) as _;
                let cmsg = libc::CMSG_FIRSTHDR(&msg);
                (*cmsg).cmsg_level = SOL_UDP;
                (*cmsg).cmsg_type = UDP_SEGMENT;
                (*cmsg).cmsg_len = libc::CMSG_LEN(2) as _;
                std::ptr::write_unaligned(libc::CMSG_DATA(cmsg) as *mut u16, seg16);
                let n = libc::sendmsg(fd, &msg, 0);
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(())
                }
            }
        });
        match r {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

#[cfg(not(target_os = "linux"))]
async fn send_segmented(
    _sock: &UdpSocket,
    _to: SocketAddr,
    _datagrams: &[IoSlice<'_>],
    _seg: usize,
) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
}
