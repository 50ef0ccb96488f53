fn main() {
    let mut v = Vec::new();
    for d in std::env::args().skip(1) {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let b = std::fs::read(&p).unwrap();
            let t = std::time::Instant::now();
            let o = tcpfec_fuzz::pair::run_input(&b);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            v.push((
                ms,
                tcpfec_fuzz::pair::SCHEMES[b.first().copied().unwrap_or(0) as usize % 25],
                o.datagrams,
                o.events,
                b.len(),
            ));
        }
    }
    v.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    let tot: f64 = v.iter().map(|x| x.0).sum();
    let ev: u64 = v.iter().map(|x| x.3).sum();
    let dg: u64 = v.iter().map(|x| x.2).sum();
    println!("events {ev} datagrams {dg}");
    println!("total {tot:.0} ms over {}", v.len());
    for x in v.iter().take(15) {
        println!(
            "{:8.1} ms {:<20} dgrams {:6} events {:8} len {}",
            x.0, x.1, x.2, x.3, x.4
        );
    }
}
