//! What a run produces: per-circuit R(t)/W(t) series and their fit (seed 002
//! §4), request timings, per-hop queue traces, per-node buffer traces and
//! transport counters, and bytes on the wire.

use hopwise_proto::time::{Dur, Time};

/// Queue state of one circuit at one node, per direction `[forward, backward]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HopSample {
    /// Cells waiting in this node's circuit queue (vanilla) or fused queue
    /// (BackTap: received and not yet sent on).
    pub queued: [u32; 2],
    /// Vanilla: cells taken from the circuit queue and written towards the
    /// socket but not yet on the wire (Tor's connection outbuf plus unsent
    /// bytes in the kernel send buffer, attributed cell by cell). BackTap:
    /// cells sent and not yet forwarded by the next hop.
    pub in_transit: [u32; 2],
    /// BackTap: the hop's send window in cells; 0 for vanilla.
    pub swnd: [u32; 2],
    /// BackTap: the baseRtt Eq. 1 uses for this hop (shared per next hop
    /// unless configured off), in microseconds; 0 before a sample and for
    /// vanilla.
    pub base_rtt_us: [u32; 2],
    /// BackTap: actualRtt of the last round that adjusted the window, in
    /// microseconds; 0 before one and for vanilla.
    pub actual_rtt_us: [u32; 2],
    /// Tor Vegas, at a packaging edge: the end-to-end congestion window and
    /// the cells in flight (sent, not yet acknowledged by a SENDME) of the
    /// direction it packages; 0 elsewhere.
    pub cwnd: [u32; 2],
    pub inflight: [u32; 2],
    /// N23: the credit this node holds for its successor (may be 0 or
    /// negative only transiently); 0 without N23.
    pub credit: [i32; 2],
}

impl HopSample {
    /// Cells held at this node in direction `d`.
    pub fn held(&self, d: usize) -> u32 {
        self.queued[d]
            + if self.swnd[d] == 0 {
                self.in_transit[d]
            } else {
                0
            }
    }
}

/// Buffer state of a whole node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeSample {
    /// Cells in circuit queues.
    pub queued_cells: u64,
    /// Bytes written to sockets and not yet sent (plus Tor's outbuf).
    pub unsent_bytes: u64,
    /// Bytes received by the kernel and not yet read by the relay.
    pub unread_bytes: u64,
    /// Cell slots in use in the node's pool.
    pub pool_cells: u64,
}

/// Counters of a node's transport.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransportStats {
    pub cells_in: u64,
    pub cells_out: u64,
    /// Bytes read from / written to the transport's sockets.
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub datagrams_in: u64,
    pub datagrams_out: u64,
    /// Cells for circuits the node does not know, or malformed input.
    pub dropped: u64,
    /// Times a connection could not take more (socket full, KIST limit).
    pub write_stalls: u64,
    /// N23: credit cells sent and received, and turns a circuit lost for
    /// lack of credit.
    pub credits_out: u64,
    pub credits_in: u64,
    pub credit_stalls: u64,
}

/// Loss recovery on a circuit's hops (BackTap), both directions summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HopLosses {
    /// Cells sent again (fast retransmits, timeouts and lost retransmissions).
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Recovery episodes that halved the window (`loss_response`).
    pub loss_cuts: u64,
}

impl std::ops::AddAssign for HopLosses {
    fn add_assign(&mut self, o: Self) {
        self.retransmits += o.retransmits;
        self.timeouts += o.timeouts;
        self.loss_cuts += o.loss_cuts;
    }
}

/// One request of a client application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    /// When the application issued it (the BEGIN cell was created).
    pub issued: Time,
    pub size: u64,
    /// Time to first byte of the response.
    pub ttfb: Option<Dur>,
    /// Time to last byte.
    pub ttlb: Option<Dur>,
}

/// Queue trace of a circuit at one node.
#[derive(Clone, Debug)]
pub struct HopTrace {
    pub node: String,
    /// Position on the path: 0 = client, 1 = guard, …, last = exit.
    pub position: usize,
    /// One sample every `TorResults::queue_interval`, from time 0.
    pub samples: Vec<HopSample>,
}

/// Everything about one circuit.
#[derive(Clone, Debug)]
pub struct CircuitResult {
    pub name: String,
    /// Client, relays (guard first), in path order.
    pub path: Vec<String>,
    /// R(t): bytes packaged at the exit (the download's packaging edge), one
    /// sample every `rw_interval` from time 0 (traced circuits only).
    pub r: Vec<u64>,
    /// W(t): bytes delivered to the client application, same instants.
    pub w: Vec<u64>,
    /// Total bytes packaged at the exit / delivered to the client.
    pub packaged: u64,
    pub delivered: u64,
    /// Delivered bytes that differed from what the server wrote.
    pub corrupt: u64,
    pub requests: Vec<RequestRecord>,
    pub hops: Vec<HopTrace>,
    pub rw_interval: Dur,
    /// Tor Vegas: the exit's controller (download direction) at the end.
    pub vegas: Option<crate::tor_vegas::TorVegas>,
    /// Loss recovery summed over the circuit's hops; `None` unless the
    /// transport recovers losses per circuit (BackTap).
    pub losses: Option<HopLosses>,
}

impl CircuitResult {
    /// Fits R and W after `from` (seed 002 §4). `None` without a trace or
    /// without progress.
    pub fn fit(&self, from: Dur) -> Option<Fit> {
        let dt = self.rw_interval.as_secs_f64();
        let n = self.r.len().min(self.w.len());
        let skip = (from.as_secs_f64() / dt).ceil() as usize;
        if skip >= n {
            return None;
        }
        let t: Vec<f64> = (skip..n).map(|i| i as f64 * dt).collect();
        let r: Vec<f64> = self.r[skip..n].iter().map(|&x| x as f64).collect();
        let w: Vec<f64> = self.w[skip..n].iter().map(|&x| x as f64).collect();
        fit_rw(&t, &r, &w)
    }

    /// Largest R(t) − W(t) over the trace.
    pub fn max_backlog(&self) -> u64 {
        self.r
            .iter()
            .zip(&self.w)
            .map(|(r, w)| r.saturating_sub(*w))
            .max()
            .unwrap_or(0)
    }

    /// Completed requests.
    pub fn completed(&self) -> usize {
        self.requests.iter().filter(|r| r.ttlb.is_some()).count()
    }
}

/// Rate, backlog and delay of a circuit in steady state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// Delivery rate: the slope of W (bytes per second).
    pub rate: f64,
    /// End-to-end backlog R − W at the window's mid-point (bytes).
    pub backlog: f64,
    /// End-to-end delay: the horizontal distance between R and W at the
    /// mid-point, `t − R⁻¹(W(t))` (seconds).
    pub delay: f64,
}

/// Least-squares line `y = a + b·t`.
fn line(t: &[f64], y: &[f64]) -> Option<(f64, f64)> {
    let n = t.len() as f64;
    if t.len() < 2 || t.len() != y.len() {
        return None;
    }
    let mt = t.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let (mut sty, mut stt) = (0.0, 0.0);
    for (ti, yi) in t.iter().zip(y) {
        sty += (ti - mt) * (yi - my);
        stt += (ti - mt) * (ti - mt);
    }
    if stt <= 0.0 {
        return None;
    }
    let b = sty / stt;
    Some((my - b * mt, b))
}

/// Fits R(t) and W(t) by least squares and derives rate, backlog and delay
/// (seed 002 §4: "a linear regression on our data points"). The backlog and
/// delay are read at the mid-point of the window, where the two fits are
/// best determined. `None` if a fit is degenerate or R does not grow.
pub fn fit_rw(t: &[f64], r: &[f64], w: &[f64]) -> Option<Fit> {
    let (ar, br) = line(t, r)?;
    let (aw, bw) = line(t, w)?;
    if br <= 0.0 {
        return None;
    }
    let tm = t.iter().sum::<f64>() / t.len() as f64;
    let wm = aw + bw * tm;
    let rm = ar + br * tm;
    Some(Fit {
        rate: bw,
        backlog: rm - wm,
        delay: tm - (wm - ar) / br,
    })
}

/// Per-node results.
#[derive(Clone, Debug)]
pub struct NodeResult {
    pub name: String,
    pub transport: TransportStats,
    /// Bytes taken from the read and write buckets.
    pub bucket_used: [u64; 2],
    /// One sample every `queue_interval` (relays with a traced circuit only).
    pub samples: Vec<NodeSample>,
    /// The most cells the node held at once.
    pub peak_cells: u64,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct TorResults {
    pub transport: &'static str,
    pub duration: Dur,
    pub rw_interval: Dur,
    pub queue_interval: Option<Dur>,
    pub circuits: Vec<CircuitResult>,
    pub nodes: Vec<NodeResult>,
    /// Bytes (IP total length) that left hosts, i.e. every packet counted once
    /// on its first link: cells, headers, ACKs, SENDMEs, feedback, handshakes.
    pub wire_bytes: u64,
    pub events: u64,
    pub event_hash: u64,
}

impl TorResults {
    /// Application bytes delivered to clients.
    pub fn goodput_bytes(&self) -> u64 {
        self.circuits.iter().map(|c| c.delivered).sum()
    }
    pub fn circuit(&self, name: &str) -> Option<&CircuitResult> {
        self.circuits.iter().find(|c| c.name == name)
    }
    pub fn node(&self, name: &str) -> Option<&NodeResult> {
        self.nodes.iter().find(|n| n.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_rate_backlog_and_delay() {
        // R(t) = 5000 + 1000 t; W(t) = R(t − 0.25): backlog 250 B, delay 250 ms.
        let t: Vec<f64> = (0..1000).map(|i| 10.0 + i as f64 * 0.01).collect();
        let r: Vec<f64> = t.iter().map(|t| 5000.0 + 1000.0 * t).collect();
        let w: Vec<f64> = t.iter().map(|t| 5000.0 + 1000.0 * (t - 0.25)).collect();
        let f = fit_rw(&t, &r, &w).unwrap();
        assert!((f.rate - 1000.0).abs() < 1e-6, "{f:?}");
        assert!((f.backlog - 250.0).abs() < 1e-6, "{f:?}");
        assert!((f.delay - 0.25).abs() < 1e-9, "{f:?}");
    }

    #[test]
    fn fit_averages_out_steps() {
        // Cells arrive in bursts every 100 ms (a periodic token bucket): W is a
        // staircase 150 kB per step, R a staircase 60 ms ahead of it.
        let step = |t: f64, lag: f64| ((t - lag) / 0.1).floor().max(0.0) * 150_000.0;
        let t: Vec<f64> = (0..2000).map(|i| 5.0 + i as f64 * 0.01).collect();
        let r: Vec<f64> = t.iter().map(|&t| step(t, 0.0) + 350_000.0).collect();
        let w: Vec<f64> = t.iter().map(|&t| step(t, 0.06)).collect();
        let f = fit_rw(&t, &r, &w).unwrap();
        assert!((f.rate / 1_500_000.0 - 1.0).abs() < 0.01, "{f:?}");
        // Backlog: 350 kB plus, on average, 0.6 of a step.
        assert!((f.backlog - 440_000.0).abs() < 5_000.0, "{f:?}");
        assert!((f.delay - 440_000.0 / 1_500_000.0).abs() < 0.005, "{f:?}");
    }

    #[test]
    fn degenerate_input_gives_none() {
        assert!(fit_rw(&[1.0], &[1.0], &[1.0]).is_none());
        assert!(fit_rw(&[1.0, 2.0], &[5.0, 5.0], &[1.0, 2.0]).is_none());
        assert!(fit_rw(&[1.0, 1.0], &[1.0, 2.0], &[1.0, 2.0]).is_none());
    }

    #[test]
    fn circuit_fit_skips_warmup() {
        let c = CircuitResult {
            name: "c".into(),
            path: vec![],
            r: (0..500)
                .map(|i| if i < 100 { 0 } else { i * 100 + 1000 })
                .collect(),
            w: (0..500)
                .map(|i| if i < 100 { 0 } else { i * 100 })
                .collect(),
            packaged: 0,
            delivered: 0,
            corrupt: 0,
            requests: vec![],
            hops: vec![],
            rw_interval: Dur::from_millis(10),
            losses: None,
            vegas: None,
        };
        let f = c.fit(Dur::from_secs(1)).unwrap();
        assert!((f.rate - 10_000.0).abs() < 1e-6);
        assert!((f.backlog - 1000.0).abs() < 1e-6);
        assert!((f.delay - 0.1).abs() < 1e-9);
        assert_eq!(c.max_backlog(), 1000);
        assert!(c.fit(Dur::from_secs(10)).is_none());
    }
}
