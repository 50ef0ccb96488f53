//! Kernel TCP for comparison runs: choosing the congestion control of a socket
//! (`TCP_CONGESTION`) and reading its counters (`TCP_INFO`). Linux only; elsewhere the
//! congestion control cannot be chosen and the counters read as zero.

use std::io;
use std::net::SocketAddr;
use tokio::net::{TcpSocket, TcpStream};

/// Connects to `addr` with `congestion` (`None`: the system default) set before the SYN.
pub async fn connect(addr: SocketAddr, congestion: Option<&str>) -> io::Result<TcpStream> {
    let sock = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    if let Some(cc) = congestion {
        set_congestion(&sock, cc)?;
    }
    let s = sock.connect(addr).await?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// The congestion controls this kernel offers (empty where it cannot say).
pub fn available() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Sets `TCP_CONGESTION` on a socket, with an error that lists what the kernel offers.
#[cfg(target_os = "linux")]
pub fn set_congestion<S: std::os::fd::AsRawFd>(sock: &S, name: &str) -> io::Result<()> {
    // SAFETY: the descriptor is a live socket for the duration of the call; the option
    // value is the name's bytes, with their length.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr() as *const libc::c_void,
            name.len() as libc::socklen_t,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    Err(io::Error::new(
        e.kind(),
        format!(
            "kernel TCP congestion control '{name}': {e} (this kernel offers: {})",
            available().join(" ")
        ),
    ))
}

/// Elsewhere the congestion control cannot be chosen.
#[cfg(not(target_os = "linux"))]
pub fn set_congestion<S>(_sock: &S, name: &str) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("choosing the kernel's TCP congestion control ('{name}') needs Linux"),
    ))
}

/// The leading part of Linux's `struct tcp_info` (include/uapi/linux/tcp.h), up to the
/// fields read here. Later kernels append fields; older ones return fewer bytes, and
/// what they do not fill stays zero.
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Default)]
struct TcpInfo {
    /// state, ca_state, retransmits, probes, backoff, options, wscale, app-limited bits.
    head: [u8; 8],
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
}

/// Reads a kernel TCP socket's counters.
#[cfg(target_os = "linux")]
pub fn sample<S: std::os::fd::AsRawFd>(sock: &S) -> io::Result<super::probe::Sample> {
    let mut info = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: `info` is a plain-data struct of `len` bytes that outlives the call; the
    // kernel writes at most `len` bytes and reports how many.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut info as *mut TcpInfo as *mut libc::c_void,
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(super::probe::Sample {
        // The kernel counts the SYN and FIN in bytes_acked: never report more than data.
        bytes_acked: info.bytes_acked.saturating_sub(1),
        retransmits: info.total_retrans as u64,
        repairs_sent: 0,
        recovered: 0,
        timeouts: 0,
        rtt_us: (info.rtt > 0).then_some(info.rtt as u64),
        cwnd_bytes: Some(info.snd_cwnd as u64 * info.snd_mss as u64),
        // u64::MAX means "no pacing limit".
        pacing_bps: (info.pacing_rate != u64::MAX && info.pacing_rate > 0)
            .then_some(info.pacing_rate as f64 * 8.0),
    })
}

/// A duplicate of the socket's descriptor for reading its counters while the stream is
/// used elsewhere.
#[cfg(target_os = "linux")]
pub fn probe(s: &TcpStream) -> super::probe::Probe {
    use std::os::fd::AsFd;
    match s.as_fd().try_clone_to_owned() {
        Ok(fd) => super::probe::Probe::Kernel(fd),
        Err(_) => super::probe::Probe::None,
    }
}

/// Elsewhere there is nothing to read.
#[cfg(not(target_os = "linux"))]
pub fn probe(_s: &TcpStream) -> super::probe::Probe {
    super::probe::Probe::None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn counters_of_a_loopback_connection_count_its_bytes() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut v = Vec::new();
            s.read_to_end(&mut v).await.unwrap();
            v.len()
        });
        let mut c = connect(addr, None).await.unwrap();
        c.write_all(&[7u8; 100_000]).await.unwrap();
        // Wait (bounded) for the acknowledgement of the last byte, which may be delayed.
        let mut s = sample(&c).unwrap();
        for _ in 0..2000 {
            if s.bytes_acked >= 100_000 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            s = sample(&c).unwrap();
        }
        // Exactly the data: the SYN is not counted, and no FIN was sent yet.
        assert_eq!(s.bytes_acked, 100_000);
        assert!(s.rtt_us.is_some());
        assert!(s.cwnd_bytes.unwrap() > 0);
        c.shutdown().await.unwrap();
        assert_eq!(server.await.unwrap(), 100_000);
    }

    #[tokio::test]
    async fn an_unknown_congestion_control_names_what_the_kernel_has() {
        let e = connect("127.0.0.1:9".parse().unwrap(), Some("no-such-cc"))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("no-such-cc"), "{e}");
        assert!(e.to_string().contains("offers"), "{e}");
    }
}
