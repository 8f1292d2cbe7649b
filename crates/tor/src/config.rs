//! Configuration of the Tor model: transports, end-to-end windows, relay token
//! buckets, applications. Every default names its source; the crate README
//! collects them in one table.

use hopwise_proto::bucket::Refill;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::rng::Rng;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::Dur;

/// Direction of a cell on a circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dir {
    /// Client → exit (requests, SENDMEs acknowledging downloads).
    Forward = 0,
    /// Exit → client (responses: the download direction).
    Backward = 1,
}

impl Dir {
    pub fn index(self) -> usize {
        self as usize
    }
    pub fn opposite(self) -> Dir {
        match self {
            Dir::Forward => Dir::Backward,
            Dir::Backward => Dir::Forward,
        }
    }
}

/// An end-to-end sliding window in cells: the packaging edge may have `start`
/// cells unacknowledged; the delivering edge sends a SENDME whenever it has
/// delivered `increment` cells (tor-spec §7.3–7.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: u32,
    pub increment: u32,
}

impl Window {
    /// Tor's circuit window: 1000 cells, SENDME every 100 (tor-spec §7.4,
    /// `CIRCWINDOW_START`, `CIRCWINDOW_INCREMENT`).
    pub const CIRCUIT: Window = Window {
        start: 1000,
        increment: 100,
    };
    /// Tor's stream window: 500 cells, SENDME every 50 (tor-spec §7.4,
    /// `STREAMWINDOW_START`, `STREAMWINDOW_INCREMENT`).
    pub const STREAM: Window = Window {
        start: 500,
        increment: 50,
    };
}

/// A relay's token bucket (Tor's `BandwidthRate`, `BandwidthBurst`,
/// `TokenBucketRefillInterval`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketSpec {
    /// Bytes per second.
    pub rate: u64,
    /// Bucket size in bytes.
    pub burst: u64,
    /// Periodic refill every T (Tor ≤ 0.3.2, nstor, the paper) or on demand
    /// with a T-long re-enable delay (Tor ≥ 0.3.3). Default: periodic, 100 ms.
    pub refill: Refill,
    /// Periodic refill only: shift this relay's refill instants by a uniform
    /// random phase in `[0, T)` drawn from the relay's random stream, so that
    /// relays do not refill in lockstep (nstor draws the same offset). Default on.
    pub random_phase: bool,
}

impl BucketSpec {
    /// `rate` = `burst`, periodic 100 ms refill with a random phase.
    pub fn new(rate: u64) -> BucketSpec {
        BucketSpec {
            rate,
            burst: rate,
            refill: Refill::Periodic(Dur::from_millis(100)),
            random_phase: true,
        }
    }
    pub fn burst(mut self, burst: u64) -> Self {
        self.burst = burst;
        self
    }
    pub fn refill(mut self, refill: Refill) -> Self {
        self.refill = refill;
        self
    }
    pub fn random_phase(mut self, on: bool) -> Self {
        self.random_phase = on;
        self
    }
    /// The refill phase for a uniform draw in `[0, 1)`: `draw · T` for a
    /// periodic bucket with `random_phase`, zero otherwise.
    pub fn phase(&self, draw: f64) -> Dur {
        match (self.refill, self.random_phase) {
            (Refill::Periodic(t), true) => Dur::from_nanos((t.as_nanos() as f64 * draw) as u64),
            _ => Dur::ZERO,
        }
    }
}

/// Which socket operations of a relay the token bucket limits (vanilla).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketScope {
    /// Only reads (the relay's global read bucket).
    Read,
    /// Only writes (the global write bucket).
    Write,
    /// Reads and writes, each with its own bucket of the same rate and burst,
    /// as Tor (`BandwidthRate` applies to each direction) and nstor do. Default.
    Both,
}

/// How much a relay writes into a TCP socket (see the crate README, "Where the
/// backlog sits").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WritePolicy {
    /// Write whatever the socket accepts, as Tor before KIST did (and nstor):
    /// the kernel send buffer (`TcpConfig::send_buffer`) takes what fits, the
    /// rest stays in the circuit queues; writing resumes when ACKs free space.
    Fill,
    /// KIST (Jansen et al., USENIX Security 2014; Tor ≥ 0.3.2's default
    /// scheduler): every `interval` the scheduler writes at most
    /// `cwnd − in flight + factor·cwnd − unsent` bytes into each socket
    /// (`KISTSockBufSizeFactor` = 1.0, `KISTSchedRunInterval` = 10 ms), so the
    /// backlog stays in the circuit queues, where round-robin can act.
    Kist { factor: f64, interval: Dur },
}

impl WritePolicy {
    /// KIST with Tor's defaults.
    pub const KIST: WritePolicy = WritePolicy::Kist {
        factor: 1.0,
        interval: Dur::from_millis(10),
    };
}

/// How TCP connections between nodes are shared by circuits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkSharing {
    /// One connection per pair of neighbouring nodes, multiplexing all their
    /// circuits (vanilla Tor).
    PerPair,
    /// One connection per circuit and hop (PCTCP, TCP-over-DTLS).
    PerCircuit,
}

/// Where N23 gates forwarding (see [`N23Config`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum N23Gating {
    /// Every node forwards a circuit's cells towards its successor only while
    /// it holds credit for that hop, and a packaging edge packages only while
    /// its own queue holds fewer than `n2 + n3` cells: every hop's buffer is
    /// bounded, as the N23 design (AlSabah et al., PETS 2011; Kung et al.,
    /// SIGCOMM 1994) specifies. Default.
    PerHop,
    /// The public reference code (nstor's `TorN23App`): only the packaging
    /// edge is gated (its application may package while the credit from its
    /// successor is positive); relays send credits but forward without
    /// looking at them, so only the first hop's backlog is bounded.
    EdgeOnly,
}

/// N23 hop-by-hop credit flow control (DefenestraTor, AlSabah et al., PETS
/// 2011, after Kung, Blackwell and Chapman, SIGCOMM 1994), as seed 002 §4
/// compares it: each node starts with `n2 + n3` credits per circuit and
/// direction for its successor, spends one per cell it sends, and gets `n2`
/// back in a credit cell the successor sends after every `n2` cells it
/// forwarded (or delivered). No end-to-end window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct N23Config {
    pub n2: u32,
    pub n3: u32,
    pub gating: N23Gating,
}

impl N23Config {
    /// N2 = 20, N3 = 70 (nstor `tor-n23.h`), gated per hop.
    pub const DEFAULT: N23Config = N23Config {
        n2: 20,
        n3: 70,
        gating: N23Gating::PerHop,
    };
    /// The initial credit (and the bound of a hop's buffer).
    pub fn start(&self) -> u32 {
        self.n2 + self.n3
    }
}

/// The vanilla transport: TCP connections between relays.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpTransportConfig {
    /// TCP of relay↔relay and client↔guard connections (Nagle: `tcp.nagle`).
    /// Default: `TcpConfig::default()` (Linux-like: SACK, timestamps, delayed
    /// ACKs, Nagle on, 4 MiB send and receive buffers = Linux's `tcp_wmem`
    /// and `tcp_rmem` maxima).
    pub tcp: TcpConfig,
    /// Congestion control of those connections. Default CUBIC (Linux; nstor
    /// ran Linux 2.6.26's stack with CUBIC).
    pub cc: CcConfig,
    pub write: WritePolicy,
    pub sharing: LinkSharing,
    pub bucket_scope: BucketScope,
    /// Tor's `CELL_QUEUE_HIGHWATER_SIZE`/`LOWWATER_SIZE` (256/64 cells): an
    /// edge stops packaging into a circuit whose queue holds `high` cells
    /// until it drains to `low`. Off by default (nstor and the paper do not
    /// model it).
    pub edge_highwater: Option<(u32, u32)>,
    /// N23 credit-based hop-by-hop flow control (`None`: off, vanilla).
    pub credits: Option<N23Config>,
    /// TCP port relays listen on (Tor's ORPort 9001).
    pub or_port: u16,
}

impl Default for TcpTransportConfig {
    fn default() -> Self {
        TcpTransportConfig {
            tcp: TcpConfig::default(),
            cc: CcConfig::from_name("cubic").expect("cubic is built in"),
            write: WritePolicy::Fill,
            sharing: LinkSharing::PerPair,
            bucket_scope: BucketScope::Both,
            edge_highwater: None,
            credits: None,
            or_port: 9001,
        }
    }
}

/// The BackTap transport (see `docs/backtap.md`).
#[derive(Clone, Debug, PartialEq)]
pub struct BacktapTransportConfig {
    /// UDP port every node binds.
    pub udp_port: u16,
    /// Protocol constants; a relay's token bucket is set from its
    /// [`BucketSpec`] on top of these.
    pub endpoint: hopwise_proto::backtap::Config,
}

impl Default for BacktapTransportConfig {
    fn default() -> Self {
        BacktapTransportConfig {
            udp_port: 9001,
            endpoint: hopwise_proto::backtap::Config::default(),
        }
    }
}

/// How cells move between nodes.
#[derive(Clone, Debug, PartialEq)]
pub enum TransportConfig {
    /// TCP connections between relays: vanilla Tor (and PCTCP with
    /// [`LinkSharing::PerCircuit`]).
    Tcp(TcpTransportConfig),
    /// BackTap over UDP.
    Backtap(BacktapTransportConfig),
}

impl TransportConfig {
    /// Vanilla Tor with the defaults above.
    pub fn vanilla() -> Self {
        TransportConfig::Tcp(TcpTransportConfig::default())
    }
    /// PCTCP: vanilla with one TCP connection per circuit and hop.
    pub fn pctcp() -> Self {
        TransportConfig::Tcp(TcpTransportConfig {
            sharing: LinkSharing::PerCircuit,
            ..TcpTransportConfig::default()
        })
    }
    /// BackTap with the protocol's defaults.
    pub fn backtap() -> Self {
        TransportConfig::Backtap(BacktapTransportConfig::default())
    }
    /// N23 (N2 = 20, N3 = 70, gated per hop) over vanilla's TCP connections;
    /// [`TorConfig::new`] turns the end-to-end windows off for it.
    pub fn n23() -> Self {
        TransportConfig::Tcp(TcpTransportConfig {
            credits: Some(N23Config::DEFAULT),
            ..TcpTransportConfig::default()
        })
    }
    /// N23 gated only at the packaging edge, as nstor's `TorN23App` does.
    pub fn n23_edge_only() -> Self {
        TransportConfig::Tcp(TcpTransportConfig {
            credits: Some(N23Config {
                gating: N23Gating::EdgeOnly,
                ..N23Config::DEFAULT
            }),
            ..TcpTransportConfig::default()
        })
    }
    /// A short name for tables.
    pub fn name(&self) -> &'static str {
        match self {
            TransportConfig::Tcp(TcpTransportConfig {
                credits: Some(c), ..
            }) => match (c.gating, self.sharing()) {
                (N23Gating::PerHop, LinkSharing::PerPair) => "n23",
                (N23Gating::EdgeOnly, LinkSharing::PerPair) => "n23-edge",
                (N23Gating::PerHop, LinkSharing::PerCircuit) => "n23-pctcp",
                (N23Gating::EdgeOnly, LinkSharing::PerCircuit) => "n23-edge-pctcp",
            },
            TransportConfig::Tcp(t) if t.sharing == LinkSharing::PerCircuit => "pctcp",
            TransportConfig::Tcp(_) => "vanilla",
            TransportConfig::Backtap(_) => "backtap",
        }
    }
    fn sharing(&self) -> LinkSharing {
        match self {
            TransportConfig::Tcp(t) => t.sharing,
            TransportConfig::Backtap(_) => LinkSharing::PerPair,
        }
    }
}

/// The server's delay between reading a request and writing the response.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ResponseDelay {
    None,
    Fixed(Dur),
    /// Exponential with mean `mean`, capped at `max` (nstor: mean 20 ms, max
    /// 200 ms, whole milliseconds; backtap-network uses a mean of 20 ms).
    Exp {
        mean: Dur,
        max: Dur,
    },
}

impl ResponseDelay {
    /// The delay of request `index` on circuit `circuit`: a function of the
    /// scenario seed and the two, so that every transport and both server
    /// placements see the same delays (common random numbers).
    pub fn draw(&self, seed: u64, circuit: u32, index: u32) -> Dur {
        match *self {
            ResponseDelay::None => Dur::ZERO,
            ResponseDelay::Fixed(d) => d,
            ResponseDelay::Exp { mean, max } => {
                let mut rng = Rng::for_component(seed, &format!("tor-response/{circuit}/{index}"));
                Dur::from_secs_f64(rng.exp(mean.as_secs_f64())).min(max)
            }
        }
    }
}

/// Time between the last byte of a response and the next request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Think {
    Zero,
    Fixed(Dur),
    /// Uniform in `[min, max]`.
    Uniform(Dur, Dur),
}

impl Think {
    pub fn draw(&self, rng: &mut Rng) -> Dur {
        match *self {
            Think::Zero => Dur::ZERO,
            Think::Fixed(d) => d,
            Think::Uniform(a, b) => {
                let span = b.saturating_sub(a).as_nanos();
                a + Dur::from_nanos((span as f64 * rng.f64()) as u64)
            }
        }
    }
}

/// What a circuit's client application does: requests of `size` bytes, one
/// at a time, each on a new stream, `think` apart, `count` times (or until
/// the end).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Traffic {
    pub size: u64,
    pub think: Think,
    pub count: Option<u32>,
}

impl Traffic {
    /// Back-to-back requests of `size` bytes (bulk; seed 002: 5 MiB).
    pub fn bulk(size: u64) -> Traffic {
        Traffic {
            size,
            think: Think::Zero,
            count: None,
        }
    }
    /// Requests of `size` bytes with a uniform think time (web; seed 002:
    /// 320 KiB, 1–20 s).
    pub fn web(size: u64, min: Dur, max: Dur) -> Traffic {
        Traffic {
            size,
            think: Think::Uniform(min, max),
            count: None,
        }
    }
    /// One request of `size` bytes.
    pub fn one_shot(size: u64) -> Traffic {
        Traffic {
            size,
            think: Think::Zero,
            count: Some(1),
        }
    }
}

/// Where the server of a circuit's streams runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerSpec {
    /// Inside the exit (nstor's model): the exit answers the request itself
    /// after the response delay; no exit↔server network leg.
    AtExit,
    /// On the named server host: the exit opens a TCP connection to it per
    /// stream (port 80) and relays the bytes.
    Host(String),
}

/// Tor's congestion control at the circuit edges: TOR_VEGAS of Tor proposal
/// 324 (RTT-based congestion control), as Tor ≥ 0.4.7 runs it
/// (`congestion_control_vegas.c`, `congestion_control_common.c`). It
/// replaces the circuit package window at the packaging edge; relays are
/// unchanged. All counts are in cells. Defaults: the live consensus values
/// (`cc_sendme_inc=31 cc_cwnd_min=124 cc_cwnd_inc=1 cc_cwnd_inc_rate=31
/// cc_sscap_exit=600 cc_vegas_alpha_exit=186 cc_vegas_delta_exit=310
/// cc_cwnd_full_gap=4 cc_cwnd_full_minpct=25`) and Tor's compiled-in
/// defaults for the rest (`cc_cwnd_init` 124, β 248, γ 186, `cc_ss_max` 5000,
/// `cc_cwnd_inc_pct_ss` 100, N-EWMA 50 %/10/2, `cc_rtt_reset_pct` 100,
/// `cc_cwnd_full_per_cwnd` 1). The sources of each are in the transport
/// table of `docs/reproductions/backtap-network.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TorVegasConfig {
    /// Cells per SENDME (`cc_sendme_inc`).
    pub sendme_inc: u32,
    /// Initial and minimum congestion window (`cc_cwnd_init`, `cc_cwnd_min`).
    pub cwnd_init: u32,
    pub cwnd_min: u32,
    /// Steady-state increment and decrement (`cc_cwnd_inc`), and how many
    /// times per cwnd it is applied (`cc_cwnd_inc_rate`): the window is
    /// updated every `round(cwnd / (inc_rate · sendme_inc))` SENDMEs (every
    /// SENDME while that is 0 or 1, i.e. below ~1400 cells).
    pub cwnd_inc: u32,
    pub cwnd_inc_rate: u32,
    /// Slow start: increment per SENDME in percent of `sendme_inc`
    /// (`cc_cwnd_inc_pct_ss`) up to `ss_cwnd_cap` (`cc_sscap_exit`), then
    /// RFC 3742's limited slow start; slow start ends at `ss_cwnd_max`
    /// (`cc_ss_max`) at the latest.
    pub cwnd_inc_pct_ss: u32,
    pub ss_cwnd_cap: u32,
    pub ss_cwnd_max: u32,
    /// Queue-use thresholds in cells (`cc_vegas_{alpha,beta,gamma,delta}_exit`).
    pub alpha: u32,
    pub beta: u32,
    pub gamma: u32,
    pub delta: u32,
    /// "cwnd full": full when `inflight + gap·sendme_inc ≥ cwnd`
    /// (`cc_cwnd_full_gap`), not full below `minpct` % (`cc_cwnd_full_minpct`),
    /// reset once per cwnd (`cc_cwnd_full_per_cwnd`).
    pub cwnd_full_gap: u32,
    pub cwnd_full_minpct: u32,
    pub cwnd_full_per_cwnd: bool,
    /// RTT smoothing: N-EWMA over `n_ewma_cwnd_pct` % of the SENDMEs per
    /// update, at most `n_ewma_max`, `n_ewma_ss` in slow start
    /// (`cc_ewma_cwnd_pct`, `cc_ewma_max`, `cc_ewma_ss`).
    pub n_ewma_cwnd_pct: u32,
    pub n_ewma_max: u32,
    pub n_ewma_ss: u32,
    /// When cwnd sits at `cwnd_min` outside slow start, min RTT is reset to
    /// this percentile mix of EWMA and min RTT (`cc_rtt_reset_pct`).
    pub rtt_reset_pct: u32,
}

impl Default for TorVegasConfig {
    fn default() -> Self {
        TorVegasConfig {
            sendme_inc: 31,
            cwnd_init: 124,
            cwnd_min: 124,
            cwnd_inc: 1,
            cwnd_inc_rate: 31,
            cwnd_inc_pct_ss: 100,
            ss_cwnd_cap: 600,
            ss_cwnd_max: 5000,
            alpha: 186,
            beta: 248,
            gamma: 186,
            delta: 310,
            cwnd_full_gap: 4,
            cwnd_full_minpct: 25,
            cwnd_full_per_cwnd: true,
            n_ewma_cwnd_pct: 50,
            n_ewma_max: 10,
            n_ewma_ss: 2,
            rtt_reset_pct: 100,
        }
    }
}

/// Everything that is not a transport: edges, applications, measurements.
#[derive(Clone, Debug, PartialEq)]
pub struct TorConfig {
    pub transport: TransportConfig,
    /// Circuit-level end-to-end window (`None`: off).
    pub circuit_window: Option<Window>,
    /// Stream-level end-to-end window (`None`: off).
    pub stream_window: Option<Window>,
    /// The client sends its request right after BEGIN instead of waiting for
    /// CONNECTED (Tor's optimistic data, proposal 181). Default on.
    pub optimistic_data: bool,
    pub response_delay: ResponseDelay,
    /// R(t)/W(t) sampling interval for traced circuits (seed 002 §4: 10 ms).
    pub rw_interval: Dur,
    /// Per-hop queue sampling interval for traced circuits (`None`: off).
    pub queue_interval: Option<Dur>,
    /// TCP of exit↔server connections and of server hosts.
    pub edge_tcp: TcpConfig,
    pub edge_cc: CcConfig,
    /// Tor's Vegas congestion control at the circuit edges instead of the
    /// circuit window (`None`: off). Requires `circuit_window = None`.
    pub vegas: Option<TorVegasConfig>,
}

impl TorConfig {
    /// Defaults for a transport: Tor's windows for TCP transports, none for
    /// BackTap and N23 (they have no end-to-end window).
    pub fn new(transport: TransportConfig) -> TorConfig {
        let windows = matches!(
            transport,
            TransportConfig::Tcp(TcpTransportConfig { credits: None, .. })
        );
        TorConfig {
            transport,
            circuit_window: windows.then_some(Window::CIRCUIT),
            stream_window: windows.then_some(Window::STREAM),
            optimistic_data: true,
            response_delay: ResponseDelay::None,
            rw_interval: Dur::from_millis(10),
            queue_interval: Some(Dur::from_millis(10)),
            edge_tcp: TcpConfig::default(),
            edge_cc: CcConfig::from_name("cubic").expect("cubic is built in"),
            vegas: None,
        }
    }

    /// Tor's congestion control (proposal 324, TOR_VEGAS with the consensus
    /// values) at the circuit edges over vanilla relays: no circuit window,
    /// and no stream window (Tor replaces stream SENDMEs by XON/XOFF flow
    /// control, proposal 324 §4, which an application that reads everything
    /// never triggers).
    pub fn tor_vegas() -> TorConfig {
        let mut cfg = TorConfig::new(TransportConfig::vanilla());
        cfg.circuit_window = None;
        cfg.stream_window = None;
        cfg.vegas = Some(TorVegasConfig::default());
        cfg
    }

    /// A short name for tables: the transport's, or `tor-vegas` when Tor's
    /// congestion control runs at the edges.
    pub fn name(&self) -> &'static str {
        match (&self.vegas, &self.transport) {
            (Some(_), TransportConfig::Tcp(t)) if t.credits.is_none() => {
                if t.sharing == LinkSharing::PerCircuit {
                    "tor-vegas-pctcp"
                } else {
                    "tor-vegas"
                }
            }
            (Some(_), TransportConfig::Backtap(_)) => "backtap+vegas",
            (Some(_), _) => "n23+vegas",
            (None, t) => t.name(),
        }
    }

    /// The vanilla transport's settings, if that is the transport.
    pub fn tcp_mut(&mut self) -> Option<&mut TcpTransportConfig> {
        match &mut self.transport {
            TransportConfig::Tcp(t) => Some(t),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_common_random_numbers() {
        let d = ResponseDelay::Exp {
            mean: Dur::from_millis(20),
            max: Dur::from_millis(200),
        };
        assert_eq!(d.draw(1, 3, 7), d.draw(1, 3, 7));
        assert_ne!(d.draw(1, 3, 7), d.draw(1, 3, 8));
        assert_ne!(d.draw(1, 3, 7), d.draw(2, 3, 7));
        let mean = (0..4000)
            .map(|i| d.draw(5, 0, i).as_secs_f64())
            .sum::<f64>()
            / 4000.0;
        assert!((mean - 0.020).abs() < 0.002, "{mean}");
        assert!((0..4000).all(|i| d.draw(5, 1, i) <= Dur::from_millis(200)));
        let mut rng = Rng::from_seed(1);
        let t = Think::Uniform(Dur::from_secs(1), Dur::from_secs(20));
        for _ in 0..1000 {
            let x = t.draw(&mut rng);
            assert!(x >= Dur::from_secs(1) && x <= Dur::from_secs(20));
        }
        assert_eq!(TransportConfig::pctcp().name(), "pctcp");
        assert_eq!(
            TorConfig::new(TransportConfig::backtap()).circuit_window,
            None
        );
    }
}
