fn main() {
    let mask: u8 = std::env::args().nth(1).unwrap().parse().unwrap();
    let mut tot = [0f64; 3];
    for e in std::fs::read_dir("/tmp/fz/p3").unwrap() {
        let mut b = std::fs::read(e.unwrap().path()).unwrap();
        if b.len() > 2 {
            b[2] &= mask;
        }
        let afec = b
            .first()
            .is_some_and(|&s| matches!(s as usize % 25, 19 | 20));
        let t = std::time::Instant::now();
        tcpfec_fuzz::pair::run_input(&b);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        tot[0] += ms;
        if afec {
            tot[1] += ms
        } else {
            tot[2] += ms
        }
    }
    println!("total {:.0} afec {:.0} other {:.0}", tot[0], tot[1], tot[2]);
}
