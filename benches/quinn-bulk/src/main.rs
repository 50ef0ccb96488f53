//! A bulk transfer over quinn (QUIC), as the reference for tcpfec's loopback speed:
//! `quinn-bulk server --listen ADDR --cert FILE` and `quinn-bulk client ADDR --cert FILE
//! --bytes N`, two processes, encrypted (TLS 1.3), GSO/GRO as quinn enables them. Each
//! side prints one JSON line: bytes, seconds, and its CPU seconds (user, system).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

const CHUNK: usize = 256 * 1024;

fn cpu() -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (s(u.ru_utime), s(u.ru_stime))
}

/// Windows large enough that flow control does not limit a loopback transfer (tcpfec
/// runs with a 4 MiB send buffer and an 8 MiB socket buffer).
fn transport() -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.stream_receive_window((16u32 << 20).into());
    t.receive_window((32u32 << 20).into());
    t.send_window(16 << 20);
    Arc::new(t)
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: quinn-bulk server --listen ADDR --cert FILE | client ADDR --cert FILE --bytes N";
    let cert_path = arg(&args, "--cert").ok_or(usage)?;
    match args.get(1).map(String::as_str) {
        Some("server") => {
            let listen: SocketAddr = arg(&args, "--listen").ok_or(usage)?.parse()?;
            let made = rcgen::generate_simple_self_signed(vec!["localhost".into()])?;
            std::fs::write(&cert_path, made.cert.der())?;
            let key = rustls::pki_types::PrivatePkcs8KeyDer::from(made.key_pair.serialize_der());
            let mut cfg = quinn::ServerConfig::with_single_cert(vec![made.cert.der().clone()], key.into())?;
            cfg.transport_config(transport());
            let ep = quinn::Endpoint::server(cfg, listen)?;
            println!("{{\"listening\":\"{}\"}}", ep.local_addr()?);
            while let Some(incoming) = ep.accept().await {
                let conn = incoming.await?;
                let (mut send, mut recv) = conn.accept_bi().await?;
                let (u0, s0) = cpu();
                let start = Instant::now();
                let mut buf = vec![0u8; CHUNK];
                let mut n = 0u64;
                while let Some(k) = recv.read(&mut buf).await? {
                    n += k as u64;
                }
                let secs = start.elapsed().as_secs_f64();
                send.write_all(&[1]).await?;
                send.finish()?;
                let _ = send.stopped().await;
                let (u1, s1) = cpu();
                println!(
                    "{{\"side\":\"server\",\"bytes\":{n},\"seconds\":{secs},\"cpu_user\":{},\"cpu_system\":{}}}",
                    u1 - u0,
                    s1 - s0
                );
            }
            Ok(())
        }
        Some("client") => {
            let to: SocketAddr = args.get(2).ok_or(usage)?.parse()?;
            let bytes: u64 = arg(&args, "--bytes").ok_or(usage)?.parse()?;
            let der = std::fs::read(&cert_path)?;
            let mut roots = rustls::RootCertStore::empty();
            roots.add(rustls::pki_types::CertificateDer::from(der))?;
            let mut cfg = quinn::ClientConfig::with_root_certificates(Arc::new(roots))?;
            cfg.transport_config(transport());
            let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse()?)?;
            ep.set_default_client_config(cfg);
            let (u0, s0) = cpu();
            let start = Instant::now();
            let conn = ep.connect(to, "localhost")?.await?;
            let (mut send, mut recv) = conn.open_bi().await?;
            let block: Vec<u8> = (0..CHUNK).map(|k| (k * 131 % 251) as u8).collect();
            let mut sent = 0u64;
            while sent < bytes {
                let n = (bytes - sent).min(CHUNK as u64) as usize;
                send.write_all(&block[..n]).await?;
                sent += n as u64;
            }
            send.finish()?;
            let mut one = [0u8; 1];
            recv.read_exact(&mut one).await?;
            let secs = start.elapsed().as_secs_f64();
            let (u1, s1) = cpu();
            conn.close(0u32.into(), b"done");
            ep.wait_idle().await;
            println!(
                "{{\"side\":\"client\",\"bytes\":{sent},\"seconds\":{secs},\"cpu_user\":{},\"cpu_system\":{}}}",
                u1 - u0,
                s1 - s0
            );
            Ok(())
        }
        _ => Err(usage.into()),
    }
}
