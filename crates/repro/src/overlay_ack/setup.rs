//! The testbed of seed 000 §III-A as a scenario, its modes, and one run.
//!
//! Hosts A, B and C hang off one switch; every port runs at 10 Mbit/s full
//! duplex. A sends to B, B sends to C; both transfers share B's link. Every
//! parameter that the paper does not state is a field of [`Setup`] whose
//! default is documented (with its source) in `docs/reproductions/overlay-ack.md`.

use super::dynamic::{DynPolicy, OverlayNode, PeerPlan, PolicyEvent};
use hopwise_proto::cc::{CcConfig, CubicConfig};
use hopwise_proto::rng::Rng;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate;
use hopwise_sim::spec::{
    AckClassifier, DirSpec, FlowSpec, Limit, LinkSpec, MeasureSpec, NodeKind, NodeSpec, QueueSpec,
    Scenario, Traffic,
};
use hopwise_sim::{pcap, Sim};
use serde::Serialize;

/// The configurations the paper compares (and the dynamic policy of §VI).
/// In summary.json a mode is its name (`"bidir-ackprio"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// §III: one unidirectional connection A→B and one B→C, plain FIFOs.
    Plain,
    /// §IV: as `Plain`, B's egress "ACKs first" with the no-payload classifier.
    AckPrio,
    /// §IV with the paper's own filter, "total length < 64 B".
    AckPrioLen64,
    /// §V-A: each connection carries bulk data both ways; plain FIFOs.
    Bidir,
    /// §V-A with "ACKs first" (no-payload classifier) at B.
    BidirAckPrio,
    /// §V-B: two unidirectional connections per neighbour pair, "ACKs first" at B.
    SplitAckPrio,
    /// §VI: one connection per pair until sustained bidirectional traffic is
    /// seen, then a second one for one direction; merged after an idle period.
    /// "ACKs first" at B.
    SplitDynamic,
}

impl Mode {
    pub const ALL: [Mode; 7] = [
        Mode::Plain,
        Mode::AckPrio,
        Mode::AckPrioLen64,
        Mode::Bidir,
        Mode::BidirAckPrio,
        Mode::SplitAckPrio,
        Mode::SplitDynamic,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::AckPrio => "ackprio",
            Mode::AckPrioLen64 => "ackprio-len64",
            Mode::Bidir => "bidir",
            Mode::BidirAckPrio => "bidir-ackprio",
            Mode::SplitAckPrio => "split-ackprio",
            Mode::SplitDynamic => "split-dynamic",
        }
    }

    pub fn from_name(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }

    /// The classifier of B's "ACKs first" egress, if the mode uses one.
    pub fn ack_first(self) -> Option<AckClassifier> {
        match self {
            Mode::Plain | Mode::Bidir => None,
            Mode::AckPrioLen64 => Some(AckClassifier::Len64),
            _ => Some(AckClassifier::NoPayload),
        }
    }

    /// Data flows both ways between neighbours (B→A and C→B exist).
    pub fn two_way(self) -> bool {
        !matches!(self, Mode::Plain | Mode::AckPrio | Mode::AckPrioLen64)
    }
}

impl Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// When the transfers run, in seconds of simulated time.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// A↔B: start and stop (paper: 0–250 s).
    pub ab: (f64, f64),
    /// B↔C: start and stop (paper: 50–300 s).
    pub bc: (f64, f64),
    /// Whole run (paper: 300 s).
    pub duration: f64,
    /// Each transfer's start and stop shift by U[0, jitter) per run.
    pub jitter: f64,
    /// Phase 1 is measured from `ab.0 + warmup` (A→B's slow start is excluded).
    pub warmup: f64,
}

impl Timeline {
    /// §III-A: A→B 0–250 s, B→C 50–300 s, 300 s; 1 s start jitter.
    pub fn paper() -> Timeline {
        Timeline {
            ab: (0.0, 250.0),
            bc: (50.0, 300.0),
            duration: 300.0,
            jitter: 1.0,
            warmup: 5.0,
        }
    }

    /// The paper's timeline with every time multiplied by `f` (for tests).
    pub fn scaled(f: f64) -> Timeline {
        let p = Timeline::paper();
        Timeline {
            ab: (p.ab.0 * f, p.ab.1 * f),
            bc: (p.bc.0 * f, p.bc.1 * f),
            duration: p.duration * f,
            jitter: p.jitter,
            warmup: p.warmup,
        }
    }

    /// Phase 1 (A→B alone), as measured: `[ab.0 + warmup, bc.0)`.
    pub fn phase1(&self) -> (f64, f64) {
        (self.ab.0 + self.warmup, self.bc.0)
    }

    /// Phase 2 (both transfers), as measured: `[bc.0 + ⌈jitter⌉, ab.1)`.
    pub fn phase2(&self) -> (f64, f64) {
        (self.bc.0 + self.jitter.ceil(), self.ab.1)
    }

    /// The window of Fig. 9 ("after fair sharing has been reached"): the
    /// paper's 100–250 s, i.e. from one phase-1 length after B→C starts to
    /// the end of A→B.
    pub fn var_window(&self) -> (f64, f64) {
        (self.bc.0 + (self.bc.0 - self.ab.0), self.ab.1)
    }
}

/// The "ACKs first" discipline's parameters (§IV).
#[derive(Clone, Debug, PartialEq)]
pub struct AckFirstParams {
    /// The data class's guaranteed share of the link (paper: 0.9).
    pub data_share: f64,
    /// Both classes together (paper: 5 % throttling, i.e. 0.95).
    pub throttle: f64,
    /// Each class's queue (HTB leaves get a pfifo of txqueuelen packets).
    pub limit: Limit,
}

/// Everything one run depends on.
#[derive(Clone, Debug)]
pub struct Setup {
    pub mode: Mode,
    pub timeline: Timeline,
    /// Every port (paper: 10 Mbit/s full duplex).
    pub link_rate: Rate,
    /// One-way propagation and switching delay per link (a LAN: tiny).
    pub link_delay: Dur,
    /// Each host's egress (device) queue (Linux txqueuelen: 1000 packets).
    pub host_queue: Limit,
    /// Each switch output port's buffer.
    pub switch_queue: Limit,
    /// TCP of every connection (buffers, initial window, …).
    pub tcp: TcpConfig,
    pub cc: CcConfig,
    pub ack_first: AckFirstParams,
    /// The §VI policy of `split-dynamic`.
    pub policy: DynPolicy,
    pub seed: u64,
    /// Sampling interval of cwnd/RTT and queue traces.
    pub trace_interval: Dur,
    /// Fine probe of A's sender for Fig. 2b: `[from, to)` seconds, step.
    pub probe: Option<(f64, f64, Dur)>,
}

/// Linux 2.6.26's advertised-window ceiling with the default
/// `tcp_rmem[2]` = 4 MiB: `tcp_grow_window` stops raising `rcv_ssthresh` at
/// `tcp_win_from_space(tcp_rmem[2]) / 2` = (4 MiB − 4 MiB/4) / 2 = 1.5 MiB when
/// a received skb's truesize exceeds 4/3 of its payload (2 KiB receive
/// buffers for 1448 B segments). See the docs for the derivation.
pub const RWND_2626: u64 = 3 << 19;

/// The switch's per-port output buffer: not published for the 3Com
/// SuperStack 3 Switch 4400, so calibrated on the two levels the paper
/// reports without prioritisation (Fig. 3's drop by a third, Fig. 6's
/// 200 kB/s; see the docs): 64 000 B, about 43 full frames.
pub const SWITCH_BUFFER: u64 = 64_000;

/// Linux 2.6.26's send-buffer ceiling (`tcp_wmem[2]` = 4 MiB of truesize)
/// in payload bytes: about 1448 of every 2304 bytes of skb truesize.
pub const SNDBUF_2626: u64 = (4 << 20) / 2304 * 1448;

impl Setup {
    /// The testbed of §III-A with the defaults this reproduction settled on.
    pub fn paper(mode: Mode, seed: u64) -> Setup {
        Setup {
            mode,
            timeline: Timeline::paper(),
            link_rate: Rate::from_mbps(10),
            link_delay: Dur::from_micros(50),
            host_queue: Limit::Packets(1000),
            switch_queue: Limit::Bytes(SWITCH_BUFFER),
            tcp: TcpConfig {
                recv_buffer: RWND_2626,
                send_buffer: SNDBUF_2626,
                // RFC 3390's 3 segments: Linux before 2.6.39.
                initial_window: 3,
                ..TcpConfig::default()
            },
            cc: CcConfig::Cubic(CubicConfig {
                // CUBIC v2.2 in 2.6.26: beta = 819/1024.
                beta: 819.0 / 1024.0,
                ..CubicConfig::default()
            }),
            ack_first: AckFirstParams {
                data_share: 0.9,
                throttle: 0.95,
                limit: Limit::Packets(1000),
            },
            policy: DynPolicy::default(),
            seed,
            trace_interval: Dur::from_millis(100),
            probe: None,
        }
    }

    fn secs(x: f64) -> Dur {
        Dur::from_secs_f64(x)
    }

    /// The scenario: nodes A, B, C, sw; links A-sw, B-sw, C-sw (interfaces
    /// 0–5: A→sw, sw→A, B→sw, sw→B, C→sw, sw→C).
    pub fn scenario(&self) -> Scenario {
        let t = &self.timeline;
        let mut s = Scenario::new(
            format!("overlay-ack/{}", self.mode.name()),
            Setup::secs(t.duration),
            self.seed,
        );
        s.start_jitter = Setup::secs(t.jitter);
        s.measure = MeasureSpec {
            goodput_interval: Dur::SECOND,
            trace_interval: self.trace_interval,
            warmup: Dur::ZERO,
            ..MeasureSpec::default()
        };
        for (n, kind) in [
            ("A", NodeKind::Host),
            ("B", NodeKind::Host),
            ("C", NodeKind::Host),
            ("sw", NodeKind::Switch),
        ] {
            s.nodes.push(NodeSpec {
                name: n.into(),
                kind,
            });
        }
        let dir = |queue: QueueSpec| DirSpec {
            rate: self.link_rate,
            delay: self.link_delay,
            queue,
            loss: 0.0,
            model: Default::default(),
        };
        let host = QueueSpec::DropTail {
            limit: self.host_queue,
        };
        let switch = QueueSpec::DropTail {
            limit: self.switch_queue,
        };
        for h in ["A", "B", "C"] {
            let egress = match (h, self.mode.ack_first()) {
                ("B", Some(classifier)) => QueueSpec::AckFirst {
                    classifier,
                    data_share: self.ack_first.data_share,
                    throttle: self.ack_first.throttle,
                    ack_limit: self.ack_first.limit,
                    data_limit: self.ack_first.limit,
                },
                _ => host.clone(),
            };
            s.links.push(LinkSpec {
                name: format!("{h}-sw"),
                a: h.into(),
                b: "sw".into(),
                ab: dir(egress),
                ba: dir(switch.clone()),
            });
        }
        let flow = |name: &str, from: &str, to: &str, (a, b): (f64, f64), bidir: bool| FlowSpec {
            name: name.into(),
            from: from.into(),
            to: to.into(),
            cc: self.cc.clone(),
            tcp: self.tcp.clone(),
            start: Setup::secs(a),
            stop: Some(Setup::secs(b)),
            traffic: Traffic::Bulk,
            bidir,
            group: None,
        };
        match self.mode {
            Mode::Plain | Mode::AckPrio | Mode::AckPrioLen64 => {
                s.flows.push(flow("A-B", "A", "B", t.ab, false));
                s.flows.push(flow("B-C", "B", "C", t.bc, false));
            }
            Mode::Bidir | Mode::BidirAckPrio => {
                s.flows.push(flow("A-B", "A", "B", t.ab, true));
                s.flows.push(flow("B-C", "B", "C", t.bc, true));
            }
            Mode::SplitAckPrio => {
                s.flows.push(flow("A-B", "A", "B", t.ab, false));
                s.flows.push(flow("B-A", "B", "A", t.ab, false));
                s.flows.push(flow("B-C", "B", "C", t.bc, false));
                s.flows.push(flow("C-B", "C", "B", t.bc, false));
            }
            Mode::SplitDynamic => {}
        }
        s
    }

    /// Runs the setup and extracts what the reproduction needs.
    pub fn run(&self) -> anyhow::Result<RunResult> {
        let sc = self.scenario();
        if !sc.flows.is_empty() {
            // (split-dynamic has agents instead of flows, which validation requires.)
            hopwise_sim::scenario::validate(&sc, &sc.name).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        let mut sim = Sim::new(&sc).map_err(|e| anyhow::anyhow!("{}: {e}", sc.name))?;
        let agents = if self.mode == Mode::SplitDynamic {
            Some(self.add_agents(&mut sim)?)
        } else {
            None
        };
        let mut probe = Vec::new();
        let mut seen = Vec::new();
        if let Some((from, to, step)) = self.probe {
            sim.run_until(Time::ZERO + Setup::secs(from));
            // Every packet on A's link in the window, in memory: the pcap
            // stream of `hopwise sim --capture`, decoded below. Only in the
            // plain mode, where A's link carries A→B's data one way and its
            // ACKs the other (the decoder tells them apart by address).
            let sinks = (self.mode == Mode::Plain).then(|| {
                [(CAPTURE_OUT, true), (CAPTURE_BACK, false)]
                    .map(|(iface, outbound)| (iface, outbound, pcap::MemorySink::new()))
            });
            for (iface, _, sink) in sinks.iter().flatten() {
                sim.attach_capture(iface, iface, Box::new(sink.clone()), 64)
                    .map_err(|e| anyhow::anyhow!(e))?;
            }
            let mut t = Time::ZERO + Setup::secs(from);
            let end = Time::ZERO + Setup::secs(to);
            while t < end {
                sim.run_until(t);
                if let Some(row) = ProbeRow::sample(&sim) {
                    probe.push(row);
                }
                t += step;
            }
            let (a, b) = (
                pcap::node_addr(sim.node_id("A").expect("node A")),
                pcap::node_addr(sim.node_id("B").expect("node B")),
            );
            for (iface, outbound, sink) in sinks.into_iter().flatten() {
                sim.detach_capture(iface).map_err(|e| anyhow::anyhow!(e))?;
                let (src, dst) = if outbound { (a, b) } else { (b, a) };
                seen.extend(SeenSegment::decode(&sink.contents(), src, dst, outbound)?);
            }
            seen.sort_by(|x, y| x.t.total_cmp(&y.t));
        }
        sim.run();
        let mut r = RunResult::extract(self, &sim, agents, probe);
        r.seen = seen;
        Ok(r)
    }

    /// The overlay agents of `split-dynamic` on A, B and C; returns their ids.
    fn add_agents(&self, sim: &mut Sim) -> anyhow::Result<[u32; 3]> {
        let t = &self.timeline;
        // One jitter per neighbour pair (its connection's start and stop).
        let jit = |pair: &str| {
            let mut r = Rng::for_component(self.seed, &format!("pair/{pair}"));
            (r.f64() * t.jitter).max(0.0)
        };
        let (jab, jbc) = (jit("A-B"), jit("B-C"));
        let at = |x: f64| Time::ZERO + Setup::secs(x);
        let win = |(a, b): (f64, f64), j: f64| (at(a + j), at(b + j));
        let plan = |peer: &str, decider: bool, w: (Time, Time)| PeerPlan {
            peer: peer.into(),
            decider,
            start: w.0,
            stop: w.1,
        };
        let nodes = [
            ("A", vec![plan("B", true, win(t.ab, jab))]),
            (
                "B",
                vec![
                    plan("A", false, win(t.ab, jab)),
                    plan("C", true, win(t.bc, jbc)),
                ],
            ),
            ("C", vec![plan("B", false, win(t.bc, jbc))]),
        ];
        let mut ids = [0u32; 3];
        for (i, (name, peers)) in nodes.into_iter().enumerate() {
            let agent = OverlayNode::new(
                name,
                peers,
                self.tcp.clone(),
                self.cc.clone(),
                self.policy.clone(),
            );
            ids[i] = sim
                .add_agent(
                    name,
                    &format!("overlay/{name}"),
                    Time::ZERO,
                    Box::new(agent),
                )
                .map_err(|e| anyhow::anyhow!(e))?;
        }
        Ok(ids)
    }
}

/// One fine sample of A's sender (Fig. 2b) and the queues on its path.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeRow {
    pub t: f64,
    /// Highest byte sent (SND.NXT) and cumulatively acknowledged (SND.UNA),
    /// as stream offsets.
    pub snd_nxt: u64,
    pub snd_una: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub cwnd: u64,
    pub srtt_ms: f64,
    /// Packets queued at A's egress, at B's egress and at the switch towards B.
    pub q_a: u64,
    pub q_b: u64,
    pub q_sw_b: u64,
}

impl ProbeRow {
    fn sample(sim: &Sim) -> Option<ProbeRow> {
        let f = sim.flow_id("A-B")?;
        let c = sim.endpoint(sim.flow(f).ends()[0]).conn()?;
        let queued = |i: usize| {
            let id = sim.ifaces().nth(i).expect("six link directions");
            sim.iface(id).stats().current().packets
        };
        let st = c.stats();
        Some(ProbeRow {
            t: sim.now().as_secs_f64(),
            snd_una: st.bytes_acked,
            snd_nxt: st.bytes_acked + c.outstanding(),
            retransmits: st.retransmits,
            timeouts: st.timeouts,
            cwnd: c.cwnd(),
            srtt_ms: c.srtt().as_millis_f64(),
            q_a: queued(IF_A_EGRESS),
            q_b: queued(IF_B_EGRESS),
            q_sw_b: queued(IF_SW_TO_B),
        })
    }
}

/// Link directions the probe captures: A's NIC towards the switch (A's
/// data leaving its egress queue) and the switch's port towards A (ACKs
/// for A starting their last hop, 41.6 µs + the link delay before A has
/// them).
pub const CAPTURE_OUT: &str = "A-sw:ab";
pub const CAPTURE_BACK: &str = "A-sw:ba";

/// One TCP segment of the A→B connection on A's link (Fig. 2b), decoded
/// from the probe's packet capture.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeenSegment {
    /// When its transmission started on the tapped link direction (s).
    pub t: f64,
    /// Data direction A → B (else B → A: ACKs).
    pub outbound: bool,
    pub seq: u32,
    pub ack: u32,
    pub len: u32,
    pub flags: u8,
}

impl SeenSegment {
    /// The TCP segments from `src` to `dst` in a capture.
    fn decode(
        file: &[u8],
        src: [u8; 4],
        dst: [u8; 4],
        outbound: bool,
    ) -> anyhow::Result<Vec<SeenSegment>> {
        let recs = pcap::read(file).map_err(|e| anyhow::anyhow!("Fig. 2b capture: {e}"))?;
        Ok(recs
            .iter()
            .filter_map(|r| Some((r.time.as_secs_f64(), pcap::tcp_view(&r.data)?)))
            .filter(|(_, v)| v.src == src && v.dst == dst)
            .map(|(t, v)| SeenSegment {
                t,
                outbound,
                seq: v.seq,
                ack: v.ack,
                len: v.payload_len,
                flags: v.flags,
            })
            .collect())
    }
}

/// Interface indices ([`hopwise_sim::IfaceId::index`]; see [`Setup::scenario`]).
pub const IF_A_EGRESS: usize = 0;
pub const IF_B_EGRESS: usize = 2;
pub const IF_SW_TO_B: usize = 3;
pub const IFACE_NAMES: [&str; 6] = ["A→sw", "sw→A", "B→sw", "sw→B", "C→sw", "sw→C"];

/// What one run leaves for the analysis (small: 1 s bins and 100 ms traces).
#[derive(Clone, Debug)]
pub struct RunResult {
    pub mode: Mode,
    pub seed: u64,
    /// Goodput per 1 s bin (bit/s) of each direction's application data:
    /// A→B, B→A, B→C, C→B (empty series for directions the mode lacks).
    pub ab: Vec<f64>,
    pub ba: Vec<f64>,
    pub bc: Vec<f64>,
    pub cb: Vec<f64>,
    /// A→B's sender: (time s, SRTT ms) every trace interval while it exists.
    pub ab_srtt: Vec<(f64, f64)>,
    /// Timeouts and fast recoveries of A→B's sender.
    pub ab_timeouts: u64,
    pub ab_recoveries: u64,
    /// Drops per interface (see [`IFACE_NAMES`]).
    pub drops: [u64; 6],
    /// Bytes that differed from what was written (must be 0).
    pub corrupt: u64,
    /// Splits and merges of the dynamic policy.
    pub events: Vec<PolicyEvent>,
    pub probe: Vec<ProbeRow>,
    /// The A→B connection's segments on A's link during the probe, in time
    /// order (empty without a probe, and in modes other than plain).
    pub seen: Vec<SeenSegment>,
    pub sim_events: u64,
    /// B's pure ACKs, and the full-sized data segments B received, over all
    /// of B's connections that receive data (how much of the ACK
    /// information towards A and C can be prioritised at all).
    pub b_pure_acks: u64,
    pub b_rx_segments: u64,
}

impl RunResult {
    fn extract(
        setup: &Setup,
        sim: &Sim,
        agents: Option<[u32; 3]>,
        probe: Vec<ProbeRow>,
    ) -> RunResult {
        let flow = |name: &str| sim.flow_id(name);
        let ends = |f: hopwise_sim::FlowId| sim.flow(f).ends();
        let rates = |e: u32| sim.endpoint(e).goodput().rates_bps();
        let mut r = RunResult {
            mode: setup.mode,
            seed: setup.seed,
            ab: vec![],
            ba: vec![],
            bc: vec![],
            cb: vec![],
            ab_srtt: vec![],
            ab_timeouts: 0,
            ab_recoveries: 0,
            drops: [0; 6],
            corrupt: sim.socks().map(|e| sim.endpoint(e).corrupt()).sum(),
            events: vec![],
            probe,
            seen: vec![],
            sim_events: sim.events(),
            b_pure_acks: 0,
            b_rx_segments: 0,
        };
        let node_b = sim.node_id("B").expect("node B");
        for e in sim.socks() {
            let ep = sim.endpoint(e);
            if let (true, Some(c)) = (ep.node() == node_b, ep.conn()) {
                let st = c.stats();
                if st.bytes_received > 0 {
                    r.b_pure_acks += st.pure_acks_sent;
                    r.b_rx_segments += st.bytes_received / c.smss().max(1);
                }
            }
        }
        for (i, f) in sim.ifaces().enumerate().take(6) {
            r.drops[i] = sim.iface(f).stats().drops;
        }
        match setup.mode {
            Mode::Plain | Mode::AckPrio | Mode::AckPrioLen64 => {
                let (ab, bc) = (flow("A-B").unwrap(), flow("B-C").unwrap());
                r.ab = rates(ends(ab)[1]);
                r.bc = rates(ends(bc)[1]);
            }
            Mode::Bidir | Mode::BidirAckPrio => {
                let (ab, bc) = (flow("A-B").unwrap(), flow("B-C").unwrap());
                r.ab = rates(ends(ab)[1]);
                r.ba = rates(ends(ab)[0]);
                r.bc = rates(ends(bc)[1]);
                r.cb = rates(ends(bc)[0]);
            }
            Mode::SplitAckPrio => {
                for (name, out) in [
                    ("A-B", &mut r.ab),
                    ("B-A", &mut r.ba),
                    ("B-C", &mut r.bc),
                    ("C-B", &mut r.cb),
                ] {
                    *out = rates(ends(flow(name).unwrap())[1]);
                }
            }
            Mode::SplitDynamic => {
                let ids = agents.expect("split-dynamic has agents");
                let node = |i: usize| sim.agent::<OverlayNode>(ids[i]).expect("overlay agent");
                let end = sim.end_time();
                r.ab = node(1).incoming_bps("A", end);
                r.cb = node(1).incoming_bps("C", end);
                r.ba = node(0).incoming_bps("B", end);
                r.bc = node(2).incoming_bps("B", end);
                r.corrupt += (0..3).map(|i| node(i).corrupt()).sum::<u64>();
                let mut ev: Vec<PolicyEvent> =
                    (0..3).flat_map(|i| node(i).events.clone()).collect();
                ev.sort_by(|a, b| a.t.total_cmp(&b.t));
                r.events = ev;
            }
        }
        // A→B's sender: the initiator of flow "A-B" (built-in flows only).
        if let Some(f) = flow("A-B") {
            let ep = sim.endpoint(ends(f)[0]);
            let n = ep.trace().len();
            let times = &sim.trace_times()[sim.trace_times().len() - n..];
            r.ab_srtt = times
                .iter()
                .zip(ep.trace())
                .filter(|(_, row)| !row.srtt_ms.is_nan())
                .map(|(t, row)| (t.as_secs_f64(), row.srtt_ms))
                .collect();
            if let Some(c) = ep.conn() {
                r.ab_timeouts = c.stats().timeouts;
                r.ab_recoveries = c.stats().fast_recoveries;
            }
        }
        r
    }

    /// The goodput series of data flowing towards B (A→B, and C→B when the
    /// mode is two-way).
    pub fn towards_b(&self) -> Vec<&[f64]> {
        let mut v = vec![&self.ab[..]];
        if self.mode.two_way() {
            v.push(&self.cb[..]);
        }
        v
    }
}

/// Mean of the 1 s bins `[t0, t1)` (seconds) of a goodput series, in bit/s.
pub fn mean_between(series: &[f64], t0: f64, t1: f64) -> f64 {
    let (i0, i1) = (t0.round() as usize, (t1.round() as usize).min(series.len()));
    if i1 <= i0 {
        return f64::NAN;
    }
    series[i0..i1].iter().sum::<f64>() / (i1 - i0) as f64
}

/// Averages of consecutive `width`-second windows starting at 0 (the
/// paper's 10 s points), in bit/s.
pub fn bins(series: &[f64], width: usize, duration: f64) -> Vec<f64> {
    let n = (duration as usize).div_ceil(width);
    (0..n)
        .map(|k| {
            let (a, b) = (k * width, ((k + 1) * width).min(series.len()));
            if b <= a {
                0.0
            } else {
                series[a..b].iter().sum::<f64>() / width as f64
            }
        })
        .collect()
}
