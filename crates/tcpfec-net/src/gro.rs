//! UDP generic receive offload (Linux `UDP_GRO`): the kernel hands over a run of
//! same-sized datagrams from one sender in a single `recvmsg`, with the segment size in a
//! control message; we split them here. On loopback and on NICs that coalesce, this cuts
//! the receive path's system calls by up to 64 times. Where the kernel does not offer it,
//! or [`disable`] was called, each call returns one datagram, as `recv_from` does.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::UdpSocket;

/// Whether segmented receives may be asked for (tests turn this off to exercise the
/// fallback).
static ALLOWED: AtomicBool = AtomicBool::new(true);

/// Turns GRO off for sockets set up afterwards.
pub fn disable() {
    ALLOWED.store(false, Ordering::Relaxed);
}

/// Set in the environment (to anything), turns GRO off: to measure without it, or to
/// work around a kernel that mishandles it.
pub const ENV_OFF: &str = "TCPFEC_NO_GRO";

/// Asks the kernel to coalesce received datagrams on `sock`; true if it agreed.
pub fn enable(sock: &UdpSocket) -> bool {
    if !ALLOWED.load(Ordering::Relaxed) || std::env::var_os(ENV_OFF).is_some() {
        return false;
    }
    imp::enable(sock)
}

/// A received run of datagrams from one sender: `len` bytes in the buffer, cut into
/// segments of `seg` bytes (the last may be shorter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// The sender.
    pub from: SocketAddr,
    /// Bytes received.
    pub len: usize,
    /// Segment size; `len` when the run is one datagram.
    pub seg: usize,
}

impl Received {
    /// The datagrams of the run, in `buf` (the buffer they were received into).
    pub fn datagrams<'a>(&self, buf: &'a [u8]) -> impl Iterator<Item = &'a [u8]> {
        buf[..self.len].chunks(self.seg.max(1))
    }
}

/// Receives without waiting: a run of datagrams, or `WouldBlock`.
pub fn try_recv(sock: &UdpSocket, buf: &mut [u8], gro: bool) -> io::Result<Received> {
    if gro {
        return sock.try_io(tokio::io::Interest::READABLE, || {
            imp::recv_segmented(sock, buf)
        });
    }
    let (len, from) = sock.try_recv_from(buf)?;
    Ok(Received {
        from,
        len,
        seg: len,
    })
}

/// Waits for and receives a run of datagrams.
pub async fn recv(sock: &UdpSocket, buf: &mut [u8], gro: bool) -> io::Result<Received> {
    loop {
        sock.readable().await?;
        match try_recv(sock, buf, gro) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use super::Received;
    use std::io;
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};
    use std::os::fd::AsRawFd;
    use tokio::net::UdpSocket;

    const SOL_UDP: libc::c_int = 17;
    const UDP_GRO: libc::c_int = 104;

    pub fn enable(sock: &UdpSocket) -> bool {
        let on: libc::c_int = 1;
        // SAFETY: a live socket and an int option of the size given.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                SOL_UDP,
                UDP_GRO,
                &on as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ) == 0
        }
    }

    pub fn recv_segmented(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<Received> {
        // SAFETY: zeroed sockaddr_storage is a valid "no address yet".
        let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        // u64 storage keeps the control buffer aligned for cmsghdr.
        let mut control = [0u64; 8];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: zeroed msghdr, then every pointer set to a live local of the stated
        // size for the duration of the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = &mut addr as *mut libc::sockaddr_storage as *mut libc::c_void;
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg is fully initialised above.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let len = n as usize;
        let mut seg = len;
        // SAFETY: walking the control messages the kernel wrote, within msg_controllen.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == SOL_UDP && (*c).cmsg_type == UDP_GRO {
                    let s = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::c_int);
                    if s > 0 {
                        seg = s as usize;
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        let from = socket_addr(&addr)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an IP sender"))?;
        Ok(Received { from, len, seg })
    }

    /// The IPv4 or IPv6 address the kernel wrote into `a`.
    fn socket_addr(a: &libc::sockaddr_storage) -> Option<SocketAddr> {
        match a.ss_family as libc::c_int {
            libc::AF_INET => {
                // SAFETY: the family says the storage holds a sockaddr_in.
                let v4 = unsafe { &*(a as *const _ as *const libc::sockaddr_in) };
                Some(SocketAddr::from((
                    Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr)),
                    u16::from_be(v4.sin_port),
                )))
            }
            libc::AF_INET6 => {
                // SAFETY: the family says the storage holds a sockaddr_in6.
                let v6 = unsafe { &*(a as *const _ as *const libc::sockaddr_in6) };
                Some(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(v6.sin6_addr.s6_addr),
                    u16::from_be(v6.sin6_port),
                    v6.sin6_flowinfo,
                    v6.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Received;
    use std::io;
    use tokio::net::UdpSocket;

    pub fn enable(_sock: &UdpSocket) -> bool {
        false
    }

    pub fn recv_segmented(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<Received> {
        let (len, from) = sock.try_recv_from(buf)?;
        Ok(Received {
            from,
            len,
            seg: len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_splits_into_its_segments() {
        let r = Received {
            from: "127.0.0.1:1".parse().unwrap(),
            len: 10,
            seg: 4,
        };
        let buf: Vec<u8> = (0..10).collect();
        let parts: Vec<&[u8]> = r.datagrams(&buf).collect();
        assert_eq!(parts, vec![&[0, 1, 2, 3][..], &[4, 5, 6, 7], &[8, 9]]);
    }

    /// Datagrams sent as one segmented run arrive whole and in order, coalesced or not.
    #[tokio::test]
    async fn segmented_sends_arrive_as_the_datagrams_they_were() {
        for gro in [true, false] {
            let rx = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let gro = gro && enable(&rx);
            let tx = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let to = rx.local_addr().unwrap();
            let mut run: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 1000]).collect();
            run.push(vec![10; 300]);
            let parts: Vec<_> = run.iter().map(|d| std::io::IoSlice::new(d)).collect();
            crate::gso::send_run(&tx, to, &parts, 1000).await.unwrap();
            let mut got: Vec<Vec<u8>> = Vec::new();
            let mut buf = vec![0u8; 65_536];
            while got.len() < 11 {
                let r = recv(&rx, &mut buf, gro).await.unwrap();
                assert_eq!(r.from, tx.local_addr().unwrap());
                got.extend(r.datagrams(&buf).map(<[u8]>::to_vec));
            }
            for (i, d) in got.iter().enumerate() {
                let want = if i == 10 { 300 } else { 1000 };
                assert_eq!(d.len(), want, "gro {gro}, datagram {i}");
                assert!(d.iter().all(|&b| b == i as u8), "gro {gro}, datagram {i}");
            }
        }
    }
}
