fn main() {
    let mut files = Vec::new();
    for d in std::env::args().skip(1) {
        for e in std::fs::read_dir(&d).unwrap() {
            files.push(std::fs::read(e.unwrap().path()).unwrap());
        }
    }
    let t = std::time::Instant::now();
    for _ in 0..3 {
        for b in &files {
            tcpfec_fuzz::pair::run_input(b);
        }
    }
    println!(
        "{} inputs x3: {:.0} per second",
        files.len(),
        3.0 * files.len() as f64 / t.elapsed().as_secs_f64()
    );
}
