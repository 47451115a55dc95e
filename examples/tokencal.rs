//! Token-count calibration: the estimate against OpenAI's o200k_base on real text (LoCoMo turns,
//! realtalk-dev messages, memdaily-dev messages), per text and per 40-text chunk, and the speed of
//! exact counting.
//!
//! ```text
//! cargo run --release --example tokencal -- [--data DIR]
//! ```
use cmp::tokens::{estimate, Counter};
use serde_json::Value;
use std::time::Instant;

fn texts(dir: &str) -> Vec<(&'static str, Vec<String>)> {
    let mut out = Vec::new();
    let read = |p: String| -> Value {
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_default()).unwrap_or(Value::Null)
    };
    let mut locomo = Vec::new();
    if let Value::Array(samples) = read(format!("{dir}/locomo10.json")) {
        for s in samples {
            if let Some(conv) = s["conversation"].as_object() {
                for (k, v) in conv {
                    if k.starts_with("session_") && !k.ends_with("date_time") {
                        for t in v.as_array().into_iter().flatten() {
                            locomo.push(format!(
                                "{}: {}",
                                t["speaker"].as_str().unwrap_or(""),
                                t["text"].as_str().unwrap_or("")
                            ));
                        }
                    }
                }
            }
        }
    }
    out.push(("locomo", locomo));
    let mut rt = Vec::new();
    let mut md = Vec::new();
    for (sub, list) in [("realtalk-dev", &mut rt), ("memdaily-dev", &mut md)] {
        let mut files: Vec<_> =
            std::fs::read_dir(format!("{dir}/{sub}")).into_iter().flatten().flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            let v = read(f.display().to_string());
            if sub == "realtalk-dev" {
                for (k, s) in v.as_object().into_iter().flatten() {
                    if k.starts_with("session_") {
                        for m in s.as_array().into_iter().flatten() {
                            list.push(format!(
                                "{}: {}",
                                m["speaker"].as_str().unwrap_or(""),
                                m["clean_text"].as_str().unwrap_or("")
                            ));
                        }
                    }
                }
            } else {
                for tr in v.as_array().into_iter().flatten() {
                    for m in tr["message_list"].as_array().into_iter().flatten() {
                        list.push(m["message"].as_str().unwrap_or("").to_string());
                    }
                }
            }
        }
    }
    out.push(("realtalk", rt));
    out.push(("memdaily", md));
    out
}

fn main() {
    let mut dir = "../shared/data".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--data" {
            dir = args.next().unwrap_or(dir);
        } else if a == "--check" {
            // Is the o200k count of standard input the sum over its lines (each with its newline)?
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut text);
            let lines: Vec<&str> = text.split('\n').collect();
            for i in 1..lines.len() {
                let (a, b) = (lines[..i].join("\n") + "\n", lines[i..].join("\n"));
                let (w, s) =
                    (Counter::O200k.count(&format!("{a}{b}")), Counter::O200k.count(&a) + Counter::O200k.count(&b));
                if w != s {
                    println!(
                        "split before line {i}: whole {w} vs parts {s}: {:?} | {:?}",
                        &lines[i - 1],
                        lines[i].chars().take(60).collect::<String>()
                    );
                }
            }
            return;
        } else if a == "--sum" {
            // Σ o200k and Σ estimate over the lines of standard input, and the smallest ratio per line.
            let (mut x, mut e, mut min) = (0usize, 0usize, f64::MAX);
            for line in std::io::stdin().lines().map_while(Result::ok) {
                let (a, b) = (Counter::O200k.count(&line), estimate(&line));
                x += a;
                e += b;
                if a >= 20 {
                    min = min.min(b as f64 / a as f64);
                }
            }
            println!("o200k {x}, estimate {e}, ratio {:.3}, smallest line ratio {min:.3}", e as f64 / x as f64);
            return;
        } else if a == "--lines" {
            // Counts each line of standard input (o200k, estimate): to see where an output's tokens go.
            for line in std::io::stdin().lines().map_while(Result::ok) {
                println!(
                    "{:5} {:5}  {}",
                    Counter::O200k.count(&line),
                    estimate(&line),
                    line.chars().take(100).collect::<String>()
                );
            }
            return;
        }
    }
    println!("| corpus | texts | o200k tokens | estimate / o200k (all) | min per 40-text chunk | min per text (≥ 20 tokens) | chars/4 / o200k |");
    println!("|---|---|---|---|---|---|---|");
    for (name, list) in texts(&dir) {
        let t0 = Instant::now();
        let exact: Vec<usize> = list.iter().map(|t| Counter::O200k.count(t)).collect();
        let secs = t0.elapsed().as_secs_f64();
        let est: Vec<usize> = list.iter().map(|t| estimate(t)).collect();
        let chars: usize = list.iter().map(|t| t.chars().count().div_ceil(4)).sum();
        let (se, sx): (usize, usize) = (est.iter().sum(), exact.iter().sum());
        let mut min_chunk = f64::MAX;
        for c in list.chunks(40) {
            let joined = c.join("\n");
            let r = estimate(&joined) as f64 / Counter::O200k.count(&joined).max(1) as f64;
            min_chunk = min_chunk.min(r);
        }
        let min_text = est
            .iter()
            .zip(&exact)
            .filter(|(_, x)| **x >= 20)
            .map(|(e, x)| *e as f64 / *x as f64)
            .fold(f64::MAX, f64::min);
        println!(
            "| {name} | {} | {sx} | {:.3} | {:.3} | {:.3} | {:.3} |",
            list.len(),
            se as f64 / sx as f64,
            min_chunk,
            min_text,
            chars as f64 / sx as f64
        );
        eprintln!("{name}: exact counting {:.1} k tokens/s (first pass, uncached)", sx as f64 / secs / 1000.0);
    }
}
