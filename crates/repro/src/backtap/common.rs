//! What seed 002's two reproductions share: the paper's constants, the
//! relays' token-bucket refills, the transports' configurations, the
//! single circuit of Fig. 5 (`backtap-circuit` sweeps it, `backtap-network`
//! runs it for Tor Vegas's standing queue), the draws every run makes, and
//! the intervals over seeds that their claims are judged with.

use hopwise_proto::backtap::{LossResponse, Startup, CELL_ITEM_LEN};
use hopwise_proto::rng::Rng;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_tor::{
    Access, BucketSpec, CircuitResult, CircuitSpec, Dir, Refill, TorConfig, TorNet, TorResults,
    Traffic, TransportConfig,
};
use serde::Serialize;

/// The paper, as summary.json names it.
pub const PAPER: &str = "seed 002: Tschorsch, Scheuermann, Mind the Gap: Towards a Backpressure-Based Transport Protocol for the Tor Network (NSDI 2016)";

/// The bottleneck of Fig. 5: the middle relay's token bucket, 1500 kB/s.
pub const C: u64 = 1_500_000;
/// Data bytes per relay cell (tor-spec `RELAY_PAYLOAD_SIZE`).
pub const CELL_DATA: f64 = 498.0;
/// Bytes a vanilla relay's bucket charges per cell (512-byte cells on TCP).
pub const VANILLA_CELL: f64 = 512.0;
/// Bytes a BackTap relay's bucket charges per cell (the 519-byte cell item).
pub const BACKTAP_CELL: f64 = CELL_ITEM_LEN as f64;
/// Eq. 1 thresholds (paper §3; `hopwise_proto::backtap::Config` defaults).
pub const ALPHA: u32 = 2;
pub const BETA: u32 = 4;

/// Payload rate of the bottleneck when its bucket charges `cell_bytes` per
/// cell of 498 data bytes.
pub fn payload_rate(cell_bytes: f64) -> f64 {
    C as f64 * CELL_DATA / cell_bytes
}

/// How a relay's token bucket refills.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefillMode {
    /// Every 100 ms: Tor ≤ 0.3.2's `TokenBucketRefillInterval`, the paper §4.
    Periodic100,
    /// Every 10 ms: nstor's BackTap relays (proposal 183).
    Periodic10,
    /// Every 1 ms: the smallest `TokenBucketRefillInterval` Tor accepts;
    /// nearly continuous.
    Periodic1,
    /// Continuous accrual with a 100 ms re-enable delay once empty (Tor ≥ 0.3.3).
    OnDemand,
}

impl RefillMode {
    pub fn refill(self) -> Refill {
        match self {
            RefillMode::Periodic100 => Refill::Periodic(Dur::from_millis(100)),
            RefillMode::Periodic10 => Refill::Periodic(Dur::from_millis(10)),
            RefillMode::Periodic1 => Refill::Periodic(Dur::from_millis(1)),
            RefillMode::OnDemand => Refill::OnDemand {
                reenable: Dur::from_millis(100),
            },
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            RefillMode::Periodic100 => "100 ms",
            RefillMode::Periodic10 => "10 ms",
            RefillMode::Periodic1 => "1 ms",
            RefillMode::OnDemand => "on-demand",
        }
    }
    /// The refill interval (on demand: the re-enable delay).
    pub fn interval(self) -> Dur {
        match self.refill() {
            Refill::Periodic(t) => t,
            Refill::OnDemand { reenable } => reenable,
        }
    }
    /// The Fig. 5 middle's bucket: rate = burst = [`C`], this refill.
    pub fn bucket(self) -> BucketSpec {
        BucketSpec::new(C).refill(self.refill())
    }
}

/// An access link in the Fig. 5 star: 1 Gbit/s (never a bottleneck), one-way
/// delay RTT/12, so that each of the three hops has RTT/3 and the circuit
/// client → exit the end-to-end RTT.
pub fn access(rtt: Dur) -> Access {
    Access::new(Rate::from_mbps(1000), Dur::from_nanos(rtt.as_nanos() / 12))
}

/// Vanilla Tor with the circuit window only (1000 cells, SENDME every 100),
/// Nagle `nagle`.
pub fn vanilla_circuit_window(nagle: bool) -> TorConfig {
    let mut cfg = TorConfig::new(TransportConfig::vanilla());
    cfg.stream_window = None;
    cfg.tcp_mut().expect("vanilla is TCP").tcp.nagle = nagle;
    cfg
}

/// Vanilla Tor with the stream window only (500 cells, SENDME every 50).
pub fn vanilla_stream_window(nagle: bool) -> TorConfig {
    let mut cfg = TorConfig::new(TransportConfig::vanilla());
    cfg.circuit_window = None;
    cfg.tcp_mut().expect("vanilla is TCP").tcp.nagle = nagle;
    cfg
}

/// Vanilla Tor with both windows (Tor's default).
pub fn vanilla_both_windows(nagle: bool) -> TorConfig {
    let mut cfg = TorConfig::new(TransportConfig::vanilla());
    cfg.tcp_mut().expect("vanilla is TCP").tcp.nagle = nagle;
    cfg
}

/// BackTap with the protocol's defaults (α = 2, β = 4, +1 cell per round
/// from 2, baseRtt shared per next hop), start-up `startup`.
pub fn backtap(startup: Startup) -> TorConfig {
    let mut cfg = TorConfig::new(TransportConfig::backtap());
    if let TransportConfig::Backtap(t) = &mut cfg.transport {
        t.endpoint.startup = startup;
    }
    cfg
}

/// Sets BackTap's `share_base_rtt`; no effect on other transports.
pub fn share_base_rtt(cfg: &mut TorConfig, on: bool) {
    if let TransportConfig::Backtap(t) = &mut cfg.transport {
        t.endpoint.share_base_rtt = on;
    }
}

/// When circuit `name` of run `seed` starts: uniform in [0.1, 1.0) s (as
/// nstor's example scenario draws client start times), plus `base`.
pub fn start_offset(seed: u64, name: &str, base: Dur) -> Dur {
    let mut rng = Rng::for_component(seed, &format!("backtap-circuit/start/{name}"));
    base + Dur::from_secs_f64(0.1 + 0.9 * rng.f64())
}

/// Delivered bytes per second of a W(t) series between `t0` and `t1` (s).
pub fn w_rate(w: &[u64], dt: f64, t0: f64, t1: f64) -> f64 {
    let i0 = ((t0 / dt).round() as usize).min(w.len().saturating_sub(1));
    let i1 = ((t1 / dt).round() as usize).min(w.len().saturating_sub(1));
    if i1 <= i0 {
        return f64::NAN;
    }
    (w[i1] - w[i0]) as f64 / ((i1 - i0) as f64 * dt)
}

// ---------------------------------------------------------------------
// The single circuit of Fig. 5.

/// One curve of Fig. 5: a transport configuration and the middle's refill.
/// [`variants`] lists them; a new transport (Tor Vegas) is one more
/// line there.
#[derive(Clone, Debug)]
pub struct Variant {
    /// Unique name (CSV, summary).
    pub key: &'static str,
    /// `transport` and `window` of the summary's `fig5` rows.
    pub transport: &'static str,
    pub window: &'static str,
    pub refill: RefillMode,
    pub config: fn() -> TorConfig,
    /// Bytes the bottleneck's bucket charges per cell of this transport.
    pub cell_bytes: f64,
    /// The window grows per hop by one cell per round (BackTap's linear
    /// start-up): runs are made long enough to ramp up
    /// (`backtap-circuit`'s `fig5::lengths`).
    pub per_hop_ramp: bool,
    /// An end-to-end window that ramps up over many RTTs (Tor Vegas): runs
    /// get more round trips (`fig5::lengths`).
    pub end_to_end_ramp: bool,
    /// A curve of the paper's figure (else a refill variant, `fig5_refill.svg`).
    pub main: bool,
}

fn vanilla_circuit() -> TorConfig {
    vanilla_circuit_window(false)
}
fn vanilla_stream() -> TorConfig {
    vanilla_stream_window(false)
}
/// Tor Vegas (proposal 324: no circuit or stream window, Vegas at the
/// edges) over vanilla relays, Nagle off like the other vanilla curves; the
/// middle refills every 100 ms, as for vanilla.
pub fn tor_vegas() -> TorConfig {
    let mut cfg = TorConfig::tor_vegas();
    cfg.tcp_mut().expect("Tor Vegas runs over TCP").tcp.nagle = false;
    cfg
}
fn backtap_linear() -> TorConfig {
    backtap(Startup::Linear)
}
fn backtap_slow_start() -> TorConfig {
    backtap(Startup::SlowStart { gamma: 1 })
}
/// [hopwise] BackTap whose hops start with HyStart++ (RFC 9406 on BackTap's
/// rounds) and answer loss with the delay-qualified rule; otherwise the
/// paper's constants (`docs/backtap.md`, "Start-up" and "Loss response").
pub fn backtap_hystart() -> TorConfig {
    let mut cfg = backtap(Startup::HyStart);
    if let TransportConfig::Backtap(t) = &mut cfg.transport {
        t.endpoint.loss_response = LossResponse::DelayQualified;
    }
    cfg
}

impl Variant {
    fn new(
        key: &'static str,
        transport: &'static str,
        window: &'static str,
        refill: RefillMode,
        config: fn() -> TorConfig,
        main: bool,
    ) -> Variant {
        let backtap = transport == "backtap";
        Variant {
            key,
            transport,
            window,
            refill,
            config,
            cell_bytes: if backtap { BACKTAP_CELL } else { VANILLA_CELL },
            per_hop_ramp: backtap,
            end_to_end_ramp: transport == "tor-vegas",
            main,
        }
    }

    /// The bottleneck's payload rate for this transport.
    pub fn payload_rate(&self) -> f64 {
        payload_rate(self.cell_bytes)
    }
}

/// The curves of Fig. 5. Nagle is off in every vanilla variant, as the paper
/// ran Fig. 5.
pub fn variants() -> Vec<Variant> {
    use RefillMode::*;
    vec![
        Variant::new(
            "vanilla-circuit",
            "vanilla",
            "circuit",
            Periodic100,
            vanilla_circuit,
            true,
        ),
        Variant::new(
            "vanilla-stream",
            "vanilla",
            "stream",
            Periodic100,
            vanilla_stream,
            true,
        ),
        Variant::new(
            "backtap",
            "backtap",
            "per-hop",
            Periodic10,
            backtap_linear,
            true,
        ),
        // Tor Vegas (proposal 324): not one of the paper's curves,
        // so it runs with the refill variants and stays out of `fig5.svg`
        // and the paper's claims.
        Variant::new(
            "tor-vegas",
            "tor-vegas",
            "cwnd",
            Periodic100,
            tor_vegas,
            false,
        ),
        Variant::new(
            "vanilla-circuit-10ms",
            "vanilla",
            "circuit",
            Periodic10,
            vanilla_circuit,
            false,
        ),
        Variant::new(
            "vanilla-circuit-on-demand",
            "vanilla",
            "circuit",
            OnDemand,
            vanilla_circuit,
            false,
        ),
        Variant::new(
            "backtap-100ms",
            "backtap",
            "per-hop",
            Periodic100,
            backtap_linear,
            false,
        ),
        Variant::new(
            "backtap-on-demand",
            "backtap",
            "per-hop",
            OnDemand,
            backtap_linear,
            false,
        ),
    ]
}

/// A variant of [`variants`] by key.
pub fn variant(key: &str) -> Option<Variant> {
    variants().into_iter().find(|v| v.key == key)
}

/// BackTap with the optional slow start (γ = 1), for the start-up comparison.
pub fn slow_start_variant() -> Variant {
    Variant::new(
        "backtap-slow-start",
        "backtap",
        "per-hop",
        RefillMode::Periodic10,
        backtap_slow_start,
        false,
    )
}

/// BackTap with HyStart++ and the delay-qualified loss response, for the
/// start-up comparison.
pub fn hystart_variant() -> Variant {
    Variant::new(
        "backtap-hystart",
        "backtap",
        "per-hop",
        RefillMode::Periodic10,
        backtap_hystart,
        false,
    )
}

/// Seconds BackTap's linear start-up needs to open a hop's window to its BDP:
/// one cell per round of one hop RTT `h`, BDP = rate · h cells, so
/// `C/cell · h²`.
pub fn ramp_estimate(rtt: Dur, cell_bytes: f64) -> f64 {
    let h = rtt.as_secs_f64() / 3.0;
    C as f64 / cell_bytes * h * h
}

/// R(t)/W(t) sampling interval. The paper sampled every 10 ms; with BackTap's
/// 10 ms refill the cells move in 10 ms bursts, and sampling at the burst
/// period aliases the fitted delay by up to one period (at 683 ms it came
/// out 1 ms *below* the propagation delay). 1 ms sampling bounds that error
/// by 1 ms; rates and backlogs do not change.
pub const RW_INTERVAL: Dur = Dur::from_millis(1);

/// Per-hop queue sampling interval. The simulator's default, 10 ms, equals
/// BackTap's refill period: every sample then falls at the same phase of the
/// middle's refill (a per-relay random offset), and reads either the full
/// burst waiting for the refill (≈ 29 cells) or the queue just after it
/// (≈ 1 cell), depending on that phase alone. Sampling every 1 ms averages
/// over the period.
pub const QUEUE_INTERVAL: Dur = Dur::from_millis(1);

/// The Fig. 5 network: client `op`, relays `guard`, `middle` (the bucket),
/// `exit` in a 1 Gbit/s star with end-to-end RTT `rtt`; one traced bulk
/// circuit `c0` starting at `start`.
pub fn net(v: &Variant, rtt: Dur, start: Dur) -> TorNet {
    let mut cfg = (v.config)();
    cfg.rw_interval = RW_INTERVAL;
    cfg.queue_interval = Some(QUEUE_INTERVAL);
    let mut net = TorNet::with_config(cfg);
    let acc = access(rtt);
    net.client("op", acc)
        .relay("guard", None, acc)
        .relay("middle", Some(v.refill.bucket()), acc)
        .relay("exit", None, acc);
    net.circuit(
        CircuitSpec::new(
            "c0",
            "op",
            &["guard", "middle", "exit"],
            Traffic::bulk(1 << 50),
        )
        .trace(true)
        .start(start),
    );
    net
}

/// Mean of `f` over a hop's queue samples (every `dt` seconds) from `from` on.
pub fn hop_mean(
    c: &CircuitResult,
    node: &str,
    dt: f64,
    from: f64,
    f: impl Fn(&hopwise_tor::HopSample) -> f64,
) -> f64 {
    let Some(h) = c.hops.iter().find(|h| h.node == node) else {
        return f64::NAN;
    };
    let i0 = (from / dt).ceil() as usize;
    let s = &h.samples[i0.min(h.samples.len())..];
    if s.is_empty() {
        return f64::NAN;
    }
    s.iter().map(f).sum::<f64>() / s.len() as f64
}

/// What the middle relay holds for the circuit in the download direction,
/// in cells, averaged over the queue samples from `from` seconds on: its
/// circuit (BackTap: fused) queue, for TCP transports plus the cells written
/// towards the guard but not yet on the wire, plus the bytes in its kernel
/// receive buffers that it has not read, in 512-byte cells (its read bucket
/// is what limits; with one circuit they are all this circuit's). Returns
/// (everything, the circuit queue alone, the unread part).
pub fn middle_held_cells(res: &TorResults, from: f64) -> (f64, f64, f64) {
    let c = &res.circuits[0];
    let b = Dir::Backward.index();
    let qdt = res.queue_interval.map_or(0.01, |d| d.as_secs_f64());
    let held = hop_mean(c, "middle", qdt, from, |s| s.held(b) as f64);
    let circuit_queue = hop_mean(c, "middle", qdt, from, |s| s.queued[b] as f64);
    let unread = res
        .nodes
        .iter()
        .find(|n| n.name == "middle")
        .map_or(0.0, |n| {
            let i0 = ((from / qdt).ceil() as usize).min(n.samples.len());
            let s = &n.samples[i0..];
            s.iter().map(|x| x.unread_bytes as f64).sum::<f64>()
                / s.len().max(1) as f64
                / VANILLA_CELL
        });
    (held + unread, circuit_queue, unread)
}

// ---------------------------------------------------------------------
// Intervals over seeds, and CSV cells.

/// `x` rounded to `decimals` places, for CSV columns kept at the precision
/// they always had (whole bytes per second, a tenth of a count).
pub fn round_to(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_keeps_the_columns_old_precision() {
        assert_eq!(round_to(0.1 * 3.0, 1), 0.3);
        assert_eq!(round_to(1234.5678, 0), 1235.0);
        assert_eq!(round_to(12.345_67, 2), 12.35);
    }
}
