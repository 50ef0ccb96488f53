//! Socket options the standard library does not expose.

use tokio::net::UdpSocket;

/// Bytes asked for each of the kernel's send and receive buffers. A gigabit flow with a
/// millisecond of scheduling jitter needs more than the usual 208 KiB default, or the
/// kernel drops datagrams before the driver reads them. The kernel caps the request at
/// `net.core.rmem_max` / `wmem_max`; the result is best effort.
pub const SOCKET_BUFFER: usize = 8 << 20;

/// Enlarges the socket's buffers (best effort; errors are ignored).
pub fn grow_buffers(socket: &UdpSocket) {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let fd = socket.as_raw_fd();
        let size = SOCKET_BUFFER as libc::c_int;
        for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
            // SAFETY: fd is a valid socket for the duration of the call, and the option
            // value is a c_int of the size passed.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    opt,
                    &size as *const libc::c_int as *const libc::c_void,
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = socket;
}
