//! A bounded load test of `cmp-mcp serve`, on 127.0.0.1 only: CLIENTS threads each send REQUESTS
//! requests (one TCP connection each), mixing `GET /v1/context` (one session per client), `POST
//! /v1/query` and `remember` through `POST /v1/tools/call`, plus an intended 403 (a read-only token's
//! write) every 50th request. It stops by itself after the last request or at the time limit.
//!
//! Checks: no status other than 200 and the intended 403s; every acknowledged `remember` is stored,
//! word for word, in the token's scope; `PRAGMA integrity_check` is ok. Prints p50/p95 latencies.
//!
//! Size (environment): CMP_LOAD_CLIENTS (default 8), CMP_LOAD_REQUESTS per client (default 60),
//! CMP_LOAD_SEED memories stored first (default 300), CMP_LOAD_SECONDS time limit (default 600).
//! BENCHMARKS.md records `CMP_LOAD_REQUESTS=2000 cargo test --release -p cmp-mcp --test http_load --
//! --nocapture`.

mod common;

use common::*;
use serde_json::json;
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[derive(Default)]
struct Tally {
    /// Latencies in microseconds, per kind of request.
    latency: HashMap<&'static str, Vec<u64>>,
    /// (id, content) of every acknowledged remember.
    stored: Vec<(String, String)>,
    /// Unexpected answers: (kind, status, body head).
    errors: Vec<(String, u16, String)>,
    intended_403: usize,
    done: usize,
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1000.0
}

#[test]
fn bounded_load_on_loopback() {
    let clients = env_usize("CMP_LOAD_CLIENTS", 8);
    let per_client = env_usize("CMP_LOAD_REQUESTS", 60);
    let seed_n = env_usize("CMP_LOAD_SEED", 300);
    let limit = Duration::from_secs(env_usize("CMP_LOAD_SECONDS", 600) as u64);

    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("load.db");
    {
        let conn = open(&db);
        let topics = ["Atlas launch", "Borealis migration", "hiring plan", "budget review", "on-call rota"];
        let names = ["Dana", "Priya", "Omar", "Lena", "Kofi"];
        let tx = conn.unchecked_transaction().expect("tx");
        for i in 0..seed_n {
            let (t, n) = (topics[i % topics.len()], names[i % names.len()]);
            tx.execute(
                "INSERT INTO cmp_memories(content, entities) VALUES (?1, ?2)",
                [
                    format!("{n} noted item {i} about the {t}: step {i} is owned by {n} and due in week {}.", i % 52),
                    format!("[\"{n}\"]"),
                ],
            )
            .expect("seed");
        }
        tx.commit().expect("commit");
    }
    let rw = token(&db, "default", false);
    let ro = token(&db, "default", true);
    let server = Server::start(&db, &["--max-concurrent", "64"]);
    let addr = server.addr;
    let started = Instant::now();

    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let (rw, ro) = (rw.clone(), ro.clone());
                s.spawn(move || {
                    let mut t = Tally::default();
                    let tasks = ["Plan the Atlas launch", "Who owns the hiring plan?", "budget review status", "Borealis migration risks"];
                    for i in 0..per_client {
                        if started.elapsed() > limit {
                            break;
                        }
                        let t0 = Instant::now();
                        let (kind, r, expect) = if i % 50 == 49 {
                            let body = json!({"name": "remember", "arguments": {"content": "must not be stored"}});
                            ("remember_read_only", post(addr, "/v1/tools/call", &ro, &body), 403)
                        } else {
                            match i % 3 {
                                0 => {
                                    let task = enc(tasks[i % tasks.len()]);
                                    let path = format!("/v1/context?task={task}&model=gpt&session_id=load-{c}");
                                    ("get_context", get(addr, &path, &rw), 200)
                                }
                                1 => ("query", post(addr, "/v1/query", &rw, &json!({"find": tasks[i % tasks.len()], "k": 5})), 200),
                                _ => {
                                    let content = format!("load client {c} request {i}: Kofi confirmed step {i}.");
                                    let body = json!({"name": "remember", "arguments": {"content": content, "entities": ["Kofi"]}});
                                    let r = post(addr, "/v1/tools/call", &rw, &body);
                                    if r.status == 200 {
                                        t.stored.push((r.json()["id"].as_str().unwrap_or_default().to_string(), content));
                                    }
                                    ("remember", r, 200)
                                }
                            }
                        };
                        t.latency.entry(kind).or_default().push(t0.elapsed().as_micros() as u64);
                        t.done += 1;
                        if r.status != expect {
                            t.errors.push((kind.to_string(), r.status, r.body.chars().take(200).collect()));
                        } else if expect == 403 {
                            t.intended_403 += 1;
                        }
                    }
                    t
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("client thread")).collect()
    });
    let elapsed = started.elapsed();

    let mut all: HashMap<&'static str, Vec<u64>> = HashMap::new();
    let (mut stored, mut errors, mut intended, mut done) = (Vec::new(), Vec::new(), 0, 0);
    for t in tallies {
        for (k, v) in t.latency {
            all.entry(k).or_default().extend(v);
        }
        stored.extend(t.stored);
        errors.extend(t.errors);
        intended += t.intended_403;
        done += t.done;
    }
    println!(
        "load: {clients} clients x {per_client} requests ({done} sent) on a {seed_n}-memory database in {:.1} s = {:.0} requests/s",
        elapsed.as_secs_f64(),
        done as f64 / elapsed.as_secs_f64()
    );
    if done < clients * per_client {
        println!("load: stopped at the {} s time limit", limit.as_secs());
    }
    let mut every: Vec<u64> = all.values().flatten().copied().collect();
    every.sort_unstable();
    let mut kinds: Vec<_> = all.into_iter().collect();
    kinds.sort_by_key(|(k, _)| *k);
    for (k, mut v) in kinds {
        v.sort_unstable();
        println!(
            "load: {k:<20} n={:<6} p50={:.2} ms p95={:.2} ms max={:.2} ms",
            v.len(),
            pct(&v, 0.5),
            pct(&v, 0.95),
            pct(&v, 1.0)
        );
    }
    println!(
        "load: {:<20} n={:<6} p50={:.2} ms p95={:.2} ms max={:.2} ms",
        "all",
        every.len(),
        pct(&every, 0.5),
        pct(&every, 0.95),
        pct(&every, 1.0)
    );
    println!("load: errors={} intended_403={intended} acknowledged_remembers={}", errors.len(), stored.len());

    assert!(errors.is_empty(), "unexpected answers: {:?}", &errors[..errors.len().min(5)]);
    let conn = open(&db);
    let mut missing = 0;
    for (id, content) in &stored {
        let found: Option<(String, String)> = conn
            .query_row("SELECT content, scope FROM cmp_memories WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
            .ok();
        if found != Some((content.clone(), "default".to_string())) {
            missing += 1;
        }
    }
    assert_eq!(missing, 0, "acknowledged remembers missing or altered");
    let ro_writes: i64 = conn
        .query_row("SELECT count(*) FROM cmp_memories WHERE content = 'must not be stored'", [], |r| r.get(0))
        .expect("count");
    assert_eq!(ro_writes, 0);
    assert_eq!(integrity(&db), "ok");
    println!("load: every acknowledged remember present; integrity_check ok");
    drop(server);
}
