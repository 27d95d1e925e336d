//! A reading of the machine's state: how fast it computes and how long a load from memory
//! takes, now. The machines this tool runs on drift (2.5x between days, 2x within minutes,
//! `docs/results/2026-11-27-slow-state/`), and a ratio of two engines moves with that
//! state: one engine slows more than another when memory slows more than the CPU. Each
//! round of a run takes a reading before it starts, and the run one more after its last
//! round, so every round lies between two readings; the report prints them, so a figure
//! comes with the state it was measured in, and a round whose state changed midway (the
//! readings on either side disagree) can be told from one that held.
//!
//! Two loads are timed: one over 4 MiB, which fits the last-level cache of the CPUs this
//! runs on (32 MiB, shared by several cores) when that cache is the machine's own, and one
//! over 64 MiB, which fits no cache. On 2026-11-27 the first read from 22 to 176 ns within
//! minutes, mostly 130-180 ns, near the second's 200 ns: other work held most of the shared
//! cache, so most of what an engine kept beyond the core's own 512 KiB came from memory.
//!
//! A reading costs about a second and holds 64 MiB only while it runs (freed before any
//! engine starts, so it is in no engine's peak RSS).

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::workload::Rng;

/// One reading, taken before a round (or after the last one).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// The round it was taken before (0-based); the run's number of rounds for the reading
    /// taken after the last round.
    pub round: usize,
    /// Nanoseconds a step of a chain of dependent multiplies and shifts (SplitMix64's
    /// mixer) took: the CPU's speed, nothing of memory.
    pub cpu_ns: f64,
    /// Nanoseconds a load of a random pointer chase over 4 MiB took: a hit in the CPU's
    /// last-level cache when the machine has it to itself, a miss to memory when other work
    /// holds it. 0 in readings made before it was taken.
    #[serde(default)]
    pub cache_ns: f64,
    /// Nanoseconds a load of a random pointer chase over 64 MiB took: each load misses
    /// every CPU cache and, mostly, the TLB, as a random read of a large table does.
    pub memory_ns: f64,
}

const CPU_STEPS: u64 = 20_000_000;
const CHASE_BYTES: usize = 64 << 20;
const CACHE_CHASE_BYTES: usize = 4 << 20;
const CHASE_LOADS: usize = 2_000_000;

/// Takes a reading (about a second).
pub fn take(round: usize) -> Probe {
    Probe {
        round,
        cpu_ns: cpu_ns(CPU_STEPS),
        cache_ns: memory_ns(CACHE_CHASE_BYTES, CHASE_LOADS),
        memory_ns: memory_ns(CHASE_BYTES, CHASE_LOADS),
    }
}

/// The reading as one line of the text report; `rounds` is the run's number of rounds.
pub fn line(p: &Probe, rounds: usize) -> String {
    let when = if p.round >= rounds {
        format!("read after round {}", p.round)
    } else {
        format!("read before round {}", p.round + 1)
    };
    format!(
        "Machine:    {:.2} ns a CPU step, {:.0} ns a load over {} MiB, {:.0} ns over {} MiB \
         ({when})",
        p.cpu_ns,
        p.cache_ns,
        CACHE_CHASE_BYTES >> 20,
        p.memory_ns,
        CHASE_BYTES >> 20,
    )
}

/// Below this many nanoseconds a load over 4 MiB, the shared cache is the machine's own
/// (free: 20-30 ns seen); above [`HELD_NS`], other work holds it (130-235 ns seen).
pub const FREE_NS: f64 = 60.0;
/// See [`FREE_NS`].
pub const HELD_NS: f64 = 100.0;

/// The state of the shared cache through one round, from the readings on either side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundState {
    /// Both readings below [`FREE_NS`].
    Free,
    /// Both readings above [`HELD_NS`].
    Held,
    /// The readings disagree (or one lies between the bounds): the state may have changed
    /// within the round, and its ratios say little about either state.
    Changed,
    /// A reading is missing (an older run, without the reading after the last round, or
    /// without the 4 MiB load).
    Unknown,
}

/// Each round's state, for `rounds` rounds, from the run's readings.
pub fn round_states(probes: &[Probe], rounds: usize) -> Vec<RoundState> {
    let at = |round: usize| {
        probes
            .iter()
            .find(|p| p.round == round)
            .map(|p| p.cache_ns)
            .filter(|&ns| ns > 0.0)
    };
    (0..rounds)
        .map(|r| match (at(r), at(r + 1)) {
            (Some(a), Some(b)) if a < FREE_NS && b < FREE_NS => RoundState::Free,
            (Some(a), Some(b)) if a > HELD_NS && b > HELD_NS => RoundState::Held,
            (Some(_), Some(_)) => RoundState::Changed,
            _ => RoundState::Unknown,
        })
        .collect()
}

/// The rounds grouped by state, as one line for the end of the report; `None` when no
/// round's state is known.
pub fn states_line(probes: &[Probe], rounds: usize) -> Option<String> {
    let states = round_states(probes, rounds);
    let list = |want: RoundState| {
        let r: Vec<String> = states
            .iter()
            .enumerate()
            .filter(|(_, s)| **s == want)
            .map(|(i, _)| (i + 1).to_string())
            .collect();
        r.join(", ")
    };
    if states.iter().all(|s| *s == RoundState::Unknown) {
        return None;
    }
    let mut parts = Vec::new();
    for (want, name) in [
        (
            RoundState::Free,
            format!("shared cache free (below {FREE_NS:.0} ns on both sides)"),
        ),
        (
            RoundState::Held,
            format!("held (above {HELD_NS:.0} ns on both sides)"),
        ),
        (RoundState::Changed, "changed within the round".to_string()),
    ] {
        let r = list(want);
        if !r.is_empty() {
            parts.push(format!("{name}: {r}"));
        }
    }
    Some(format!("Rounds by state: {}", parts.join("; ")))
}

/// The readings' ranges, for the end of the report; `None` without readings.
pub fn summary(probes: &[Probe]) -> Option<String> {
    let range = |f: fn(&Probe) -> f64| {
        probes
            .iter()
            .map(f)
            .fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)))
    };
    if probes.is_empty() {
        return None;
    }
    let (c0, c1) = range(|p| p.cpu_ns);
    let (k0, k1) = range(|p| p.cache_ns);
    let (m0, m1) = range(|p| p.memory_ns);
    // Readings from before the 4 MiB load was timed hold 0 for it.
    let cache = if k0 > 0.0 {
        format!(
            ", {k0:.0}-{k1:.0} ns a load over {} MiB",
            CACHE_CHASE_BYTES >> 20
        )
    } else {
        String::new()
    };
    Some(format!(
        "Machine state over the rounds: {c0:.2}-{c1:.2} ns a CPU step{cache}, {m0:.0}-{m1:.0} \
         ns a load over {} MiB (see docs/bench.md, \"The machine's state\")",
        CHASE_BYTES >> 20
    ))
}

fn cpu_ns(steps: u64) -> f64 {
    let start = Instant::now();
    let mut z = std::hint::black_box(0x9e37_79b9_7f4a_7c15u64);
    for _ in 0..steps {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    }
    std::hint::black_box(z);
    start.elapsed().as_nanos() as f64 / steps.max(1) as f64
}

/// Sattolo's shuffle of `0..n`: a random permutation that is a single cycle, so a chase
/// through it meets every slot once before it comes back to one.
fn one_cycle(n: usize) -> Vec<u32> {
    let mut next: Vec<u32> = (0..n as u32).collect();
    let mut rng = Rng::new(0x5eed);
    for i in (1..n).rev() {
        let j = rng.uniform(i as u64) as usize;
        next.swap(i, j);
    }
    next
}

/// Slots of the chase in a 64-byte cache line.
const LINE: usize = 64 / std::mem::size_of::<u32>();

fn memory_ns(bytes: usize, loads: usize) -> f64 {
    // One slot a cache line, the lines in a random cycle: each load is a line of its own,
    // and the shuffle moves line numbers (a few MiB), not every slot.
    let lines = (bytes / 64).max(2);
    let mut next = vec![0u32; lines * LINE];
    for (line, &to) in one_cycle(lines).iter().enumerate() {
        next[line * LINE] = to * LINE as u32;
    }
    let start = Instant::now();
    let mut at = 0u32;
    for _ in 0..loads {
        at = next[at as usize];
    }
    std::hint::black_box(at);
    start.elapsed().as_nanos() as f64 / loads.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_are_plausible() {
        // Small sizes: a test checks the arithmetic, not the machine.
        let cpu = cpu_ns(100_000);
        let mem = memory_ns(1 << 20, 100_000);
        assert!(cpu > 0.0 && cpu < 1_000.0, "{cpu}");
        assert!(mem > 0.0 && mem < 100_000.0, "{mem}");
    }

    #[test]
    fn the_chase_is_one_cycle() {
        let n = 1000;
        let next = one_cycle(n);
        let mut at = 0usize;
        for step in 1..=n {
            at = next[at] as usize;
            if at == 0 {
                assert_eq!(step, n, "a cycle of {step} slots, not {n}");
            }
        }
        assert_eq!(at, 0);
    }

    #[test]
    fn summary_gives_the_ranges() {
        let p = |round, cpu_ns, cache_ns, memory_ns| Probe {
            round,
            cpu_ns,
            cache_ns,
            memory_ns,
        };
        assert_eq!(summary(&[]), None);
        let s = summary(&[p(0, 1.5, 30.0, 120.0), p(1, 3.0, 15.0, 95.0)]).unwrap();
        assert!(s.contains("1.50-3.00 ns a CPU step"), "{s}");
        assert!(s.contains("15-30 ns a load over 4 MiB"), "{s}");
        assert!(s.contains("95-120 ns a load over 64 MiB"), "{s}");
        let l = line(&p(1, 1.5, 30.0, 120.0), 3);
        assert!(
            l.contains("before round 2") && l.contains("30 ns a load over 4 MiB"),
            "{l}"
        );
        let last = line(&p(3, 1.5, 30.0, 120.0), 3);
        assert!(last.contains("after round 3"), "{last}");
        // A reading from before the 4 MiB load was timed: no range for it.
        let old = summary(&[p(0, 1.5, 0.0, 120.0)]).unwrap();
        assert!(!old.contains("over 4 MiB"), "{old}");
    }

    #[test]
    fn older_readings_load_without_the_cache_load() {
        let p: Probe =
            serde_json::from_str(r#"{"round":0,"cpu_ns":3.4,"memory_ns":210.0}"#).unwrap();
        assert_eq!(p.cache_ns, 0.0);
    }

    #[test]
    fn a_round_takes_the_state_of_the_readings_on_either_side() {
        let p = |round, cache_ns| Probe {
            round,
            cpu_ns: 3.0,
            cache_ns,
            memory_ns: 200.0,
        };
        use RoundState::*;
        // Rounds 1 and 2 free / held on both sides; round 3 changed; round 4 has no reading
        // after it (a run from before the reading after the last round).
        let probes = [p(0, 22.0), p(1, 25.0), p(2, 150.0), p(3, 160.0), p(4, 24.0)];
        assert_eq!(round_states(&probes, 4), vec![Free, Changed, Held, Changed]);
        assert_eq!(round_states(&probes[..4], 4)[3], Unknown);
        // Between the bounds is not a state.
        assert_eq!(round_states(&[p(0, 80.0), p(1, 80.0)], 1), vec![Changed]);
        // A reading without the 4 MiB load.
        assert_eq!(round_states(&[p(0, 0.0), p(1, 20.0)], 1), vec![Unknown]);
        let line = states_line(&probes, 4).unwrap();
        assert!(
            line.contains("free (below 60 ns on both sides): 1;"),
            "{line}"
        );
        assert!(
            line.contains("held (above 100 ns on both sides): 3;"),
            "{line}"
        );
        assert!(line.contains("changed within the round: 2, 4"), "{line}");
        assert_eq!(states_line(&probes[..1], 1), None);
    }
}
