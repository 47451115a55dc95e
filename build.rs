// Records the git commit for cmp_debug(), and lays out OpenAI's byte-pair tables for
// src/tokens/bpe.rs.
use std::path::Path;

fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=CMP_GIT_COMMIT={commit}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs");
    println!("cargo:rerun-if-changed=build.rs");
    let out = std::env::var("OUT_DIR").expect("OUT_DIR");
    type Make = fn() -> tiktoken_rs::CoreBPE;
    let tables: [(&str, Make); 2] = [
        ("o200k", || tiktoken_rs::o200k_base().expect("tiktoken-rs o200k_base")),
        ("cl100k", || tiktoken_rs::cl100k_base().expect("tiktoken-rs cl100k_base")),
    ];
    for (name, table) in tables {
        let path = Path::new(&out).join(format!("{name}.bpe"));
        // Laid out on every run (about a second), written only when it changed: a table never goes
        // stale, and an unchanged one does not make the crate build again.
        let bytes = layout(&table());
        if std::fs::read(&path).ok().as_deref() != Some(bytes.as_slice()) {
            std::fs::write(&path, bytes).expect("write the table");
        }
    }
}

/// A table as `src/tokens/bpe.rs` reads it: n (u32 LE), n + 1 offsets (u32 LE) into the bytes that
/// follow, token r being bytes[offset r .. offset r+1]; empty for a rank that is no ordinary token
/// (unused, or a special token, which ordinary encoding never emits).
fn layout(bpe: &tiktoken_rs::CoreBPE) -> Vec<u8> {
    let special: std::collections::HashSet<&str> = bpe.special_tokens();
    let mut tokens: Vec<Vec<u8>> = Vec::new();
    let mut misses = 0;
    for r in 0u32.. {
        match bpe.decode_bytes(&[r]) {
            Ok(b) if !std::str::from_utf8(&b).is_ok_and(|s| special.contains(s)) => {
                tokens.resize(r as usize, Vec::new());
                tokens.push(b);
                misses = 0;
            }
            _ => misses += 1,
        }
        // Past every token and special token of both tables.
        if misses > 4096 {
            break;
        }
    }
    let n = tokens.len() as u32;
    let mut out = Vec::new();
    out.extend_from_slice(&n.to_le_bytes());
    let mut at = 0u32;
    for t in &tokens {
        out.extend_from_slice(&at.to_le_bytes());
        at += t.len() as u32;
    }
    out.extend_from_slice(&at.to_le_bytes());
    for t in &tokens {
        out.extend_from_slice(t);
    }
    out
}
