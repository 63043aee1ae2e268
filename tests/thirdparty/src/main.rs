// tests/thirdparty/src/main.rs: the Rust program rust.sh runs with and without leek.
//
// Rust's std allocates through the system allocator on Linux (malloc, realloc, free, and
// posix_memalign for alignments above 16), so leek sees every Box, Vec, String and HashMap. Eight
// threads grow vectors, strings and hash maps (realloc), allocate 64- and 4096-byte-aligned boxed
// slices, and send vectors over a channel to a thread that frees them (frees from another thread
// than the one that allocated). The output is a checksum and counts that depend only on the
// arguments, never on scheduling or on HashMap's random order: rust.sh compares it with a run
// without leek. It must never print anything that varies from run to run.
//
// Usage: rustmain ROUNDS
use std::collections::HashMap;
use std::sync::mpsc;
use std::thread;

const THREADS: u64 = 8;
const PROBE_PAGES: usize = 16;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

#[derive(Clone, Copy)]
#[repr(C, align(4096))]
struct Page([u8; 4096]);

// xorshift64: a deterministic stream per thread.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn fnv(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, &b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

// probe_aligned makes 4096-byte-aligned allocations of PROBE_PAGES pages and nothing else does:
// rust.sh counts them in the profile through this frame.
#[inline(never)]
fn probe_aligned(fill: u8) -> Box<[Page]> {
    vec![Page([fill; 4096]); PROBE_PAGES].into_boxed_slice()
}

fn work(id: u64, rounds: u64, tx: mpsc::Sender<Vec<u8>>) -> u64 {
    let mut x = 0x9E3779B97F4A7C15 ^ (id + 1).wrapping_mul(0x100000001B3);
    let mut sum = 0u64;
    for r in 0..rounds {
        // Vec and String growth: realloc.
        let mut v: Vec<u64> = Vec::new();
        let mut s = String::new();
        let n = 100 + next(&mut x) % 900;
        for i in 0..n {
            v.push(next(&mut x));
            s.push_str(&format!("{:x}:{};", v[i as usize] & 0xffff, i));
        }
        sum = fnv(sum, s.as_bytes());
        sum = sum.wrapping_add(v.iter().fold(0u64, |a, b| a.wrapping_add(*b)));

        // A HashMap that grows; its order is random, so the digest is order-free.
        let mut m: HashMap<String, u64> = HashMap::new();
        for i in 0..n {
            *m.entry(format!("k{}", (v[i as usize] >> 40) % 300)).or_insert(0) += i;
        }
        sum = sum.wrapping_add(
            m.iter().fold(0u64, |a, (k, c)| a.wrapping_add(fnv(0xcbf29ce484222325, k.as_bytes()).wrapping_mul(*c))),
        );

        // Over-aligned boxed slices: posix_memalign.
        let lines: Box<[Line]> = vec![Line([(r & 0xff) as u8; 64]); 1 + (next(&mut x) % 64) as usize].into_boxed_slice();
        assert_eq!(lines.as_ptr() as usize % 64, 0);
        sum = sum.wrapping_add(lines.len() as u64 * lines[0].0[63] as u64);
        let pages = probe_aligned((next(&mut x) & 0xff) as u8);
        assert_eq!(pages.as_ptr() as usize % 4096, 0);
        sum = fnv(sum, &pages[PROBE_PAGES - 1].0[4000..]);

        // A vector freed by another thread.
        let mut out = vec![0u8; 1 + (next(&mut x) % 20000) as usize];
        out[0] = id as u8;
        tx.send(out).unwrap();
    }
    sum
}

fn main() {
    let rounds: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).expect("usage: rustmain ROUNDS");
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let sink = thread::spawn(move || {
        let mut bytes = 0u64;
        for v in rx {
            bytes += v.len() as u64;
        }
        bytes
    });
    let workers: Vec<_> = (0..THREADS)
        .map(|id| {
            let tx = tx.clone();
            thread::spawn(move || work(id, rounds, tx))
        })
        .collect();
    drop(tx);
    let mut total = 0u64;
    for w in workers {
        total = total.wrapping_mul(1000003).wrapping_add(w.join().unwrap());
    }
    let sent = sink.join().unwrap();
    println!("threads {}", THREADS);
    println!("rounds {}", rounds);
    println!("sent_bytes {}", sent);
    println!("probe_allocs {}", THREADS * rounds);
    println!("probe_size {}", PROBE_PAGES * 4096);
    println!("checksum {:016x}", total);
}
