//! Topologies and random draws of the network experiments: the star of
//! Fig. 6a, the NA/EU dumbbell of Fig. 7, the empirical distributions they
//! draw from (iPlane RTT quartiles, Akamai access rates), and the choice of
//! TorPS circuits.
//!
//! Every draw is a function of the run's seed and a component name only, so
//! every transport sees the same relays, paths, delays, access rates, start
//! times, think times and server delays (common random numbers).

use super::Transport;
use hopwise_proto::rng::Rng;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::spec::Limit;
use hopwise_tor::{
    Access, BucketSpec, CircuitSpec, ResponseDelay, TorNet, TorpsPaths, TorpsRelay, Traffic,
};
use serde::Serialize;

/// A piecewise-linear CDF through `(x, F(x))` points with F rising from 0
/// to 1; [`Cdf::sample`] draws from it by inverse-transform sampling (a
/// uniform u, then the x where the linear interpolation reaches u), as ns-3's
/// `EmpiricalRandomVariable` (with interpolation) does in nstor.
#[derive(Clone, Copy, Debug)]
pub struct Cdf(pub &'static [(f64, f64)]);

impl Cdf {
    /// The x at which the CDF reaches `u` ∈ [0, 1].
    pub fn quantile(&self, u: f64) -> f64 {
        let p = self.0;
        let u = u.clamp(0.0, 1.0);
        for w in p.windows(2) {
            let ((x0, f0), (x1, f1)) = (w[0], w[1]);
            if u <= f1 {
                if f1 <= f0 {
                    return x1;
                }
                return x0 + (x1 - x0) * (u - f0) / (f1 - f0);
            }
        }
        p.last().map_or(f64::NAN, |q| q.0)
    }
    /// One draw.
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        self.quantile(rng.f64())
    }
}

/// iPlane RTTs between relays of North America (ms; min, Q1, median, Q3,
/// max as the CDF's 0, ¼, ½, ¾, 1), as the paper and nstor's dumbbell
/// helper take them (2015-08-04).
pub const RTT_NA_NA: Cdf = Cdf(&[
    (11.0, 0.0),
    (29.0, 0.25),
    (45.0, 0.5),
    (73.0, 0.75),
    (148.0, 1.0),
]);
/// iPlane RTTs between European relays (ms).
pub const RTT_EU_EU: Cdf = Cdf(&[
    (14.0, 0.0),
    (27.0, 0.25),
    (37.0, 0.5),
    (48.0, 0.75),
    (65.0, 1.0),
]);
/// iPlane RTTs between European and North American relays (ms).
pub const RTT_EU_NA: Cdf = Cdf(&[
    (78.0, 0.0),
    (117.0, 0.25),
    (132.0, 0.5),
    (161.0, 0.75),
    (252.0, 1.0),
]);
/// Akamai State of the Internet, Q1 2015: client access rates in Germany
/// (Mbit/s; CDF points), as the paper and nstor use for European clients.
pub const AKAMAI_DE: Cdf = Cdf(&[
    (1.0, 0.0),
    (4.0, 0.14),
    (10.0, 0.69),
    (15.0, 0.86),
    (47.0, 1.0),
]);
/// The same for the United States (North American clients).
pub const AKAMAI_US: Cdf = Cdf(&[
    (1.0, 0.0),
    (4.0, 0.24),
    (10.0, 0.56),
    (15.0, 0.78),
    (54.0, 1.0),
]);

/// A side of the dumbbell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Continent {
    #[serde(rename = "NA")]
    Na,
    #[serde(rename = "EU")]
    Eu,
}

impl Continent {
    pub fn switch(self) -> &'static str {
        match self {
            Continent::Na => "na",
            Continent::Eu => "eu",
        }
    }
    /// RTTs between two hosts on this side.
    pub fn rtt_cdf(self) -> Cdf {
        match self {
            Continent::Na => RTT_NA_NA,
            Continent::Eu => RTT_EU_EU,
        }
    }
    /// Client access rates on this side.
    pub fn access_cdf(self) -> Cdf {
        match self {
            Continent::Na => AKAMAI_US,
            Continent::Eu => AKAMAI_DE,
        }
    }
}

/// Relays' access links: 1 Gbit/s (nstor: 10 Gbit/s; neither limits a relay
/// whose bucket is at most 13 MB/s).
pub const RELAY_ACCESS: Rate = Rate::from_mbps(1000);
/// Drop-tail limit of every access link: 100 packets (ns-3's `DropTailQueue`
/// default, which nstor's point-to-point links used). At a 4 Mbit/s client
/// link that is 300 ms of buffer; Linux's 1000 would be 3 s.
pub const ACCESS_QUEUE: Limit = Limit::Packets(100);
/// The dumbbell's trunk rate (nstor: 10 Gbit/s).
pub const TRUNK_RATE: Rate = Rate::from_mbps(10_000);
/// The server's response delay: exponential, mean 20 ms, capped at 200 ms
/// (nstor's pseudo server).
pub const RESPONSE_DELAY: ResponseDelay = ResponseDelay::Exp {
    mean: Dur::from_millis(20),
    max: Dur::from_millis(200),
};
/// Bulk: 5 MiB back to back; web: 320 KiB with 1–20 s think time (seed 002 §4).
pub const BULK_SIZE: u64 = 5 << 20;
pub const WEB_SIZE: u64 = 320 << 10;

pub fn bulk() -> Traffic {
    Traffic::bulk(BULK_SIZE)
}
pub fn web() -> Traffic {
    Traffic::web(WEB_SIZE, Dur::from_secs(1), Dur::from_secs(20))
}

/// `m` distinct circuits of `paths`, uniformly at random (nstor's
/// `ParseFile` draws m distinct line numbers), in the order drawn.
pub fn choose_circuits(paths: &TorpsPaths, m: usize, seed: u64, what: &str) -> Vec<usize> {
    let n = paths.circuits.len();
    assert!(m <= n, "{m} circuits requested, the file has {n}");
    let mut rng = Rng::for_component(seed, &format!("backtap-network/{what}/paths"));
    // Partial Fisher–Yates over the line indexes.
    let mut idx: Vec<usize> = (0..n).collect();
    for i in 0..m {
        let j = i + rng.below((n - i) as u64) as usize;
        idx.swap(i, j);
    }
    idx.truncate(m);
    idx
}

/// A relay's name in the simulated network (its index in the path file).
pub fn relay_name(i: usize) -> String {
    format!("r{i}")
}

/// A relay's token bucket: rate = burst = consensus bandwidth (nstor), the
/// transport's refill, random phase per relay for the TCP-based transports
/// (BackTap's endpoint refills on the simulation clock, in phase: see the
/// crates/tor README).
pub fn bucket(relay: &TorpsRelay, t: &Transport) -> BucketSpec {
    BucketSpec::new(relay.bandwidth).refill(t.refill.refill())
}

/// The star of Fig. 6a: relays and one client per circuit on one switch,
/// every pair of hosts `rtt` apart, 1 Gbit/s links (the relays' buckets are
/// the bottlenecks, as in the paper).
#[derive(Clone, Debug, Serialize)]
pub struct StarDraw {
    pub seed: u64,
    pub rtt_ms: u64,
    /// Chosen lines of the 50-relay file.
    pub lines: Vec<usize>,
    /// Start of each circuit's first request (s).
    pub starts_s: Vec<f64>,
    /// Relays that carry a circuit (indexes into the file's relays).
    pub relays: Vec<usize>,
}

impl StarDraw {
    pub fn new(seed: u64, circuits: usize, rtt: Dur, start_window: Dur) -> StarDraw {
        let paths = TorpsPaths::fifty();
        let lines = choose_circuits(paths, circuits, seed, "star");
        let mut rng = Rng::for_component(seed, "backtap-network/star/starts");
        let starts_s = lines
            .iter()
            .map(|_| rng.f64() * start_window.as_secs_f64())
            .collect();
        let mut relays: Vec<usize> = lines.iter().flat_map(|&l| paths.circuits[l].path).collect();
        relays.sort_unstable();
        relays.dedup();
        StarDraw {
            seed,
            rtt_ms: rtt.as_millis(),
            lines,
            starts_s,
            relays,
        }
    }

    /// The network for transport `t`; every circuit traced (R/W every
    /// `rw`, hop queues every `queue`).
    pub fn net(&self, t: &Transport, traffic: Traffic, rw: Dur, queue: Option<Dur>) -> TorNet {
        let paths = TorpsPaths::fifty();
        let mut cfg = t.config();
        cfg.response_delay = RESPONSE_DELAY;
        cfg.rw_interval = rw;
        cfg.queue_interval = queue;
        let mut net = TorNet::with_config(cfg);
        let acc = Access::star(RELAY_ACCESS, Dur::from_millis(self.rtt_ms)).queue(ACCESS_QUEUE);
        for &r in &self.relays {
            net.relay(&relay_name(r), Some(bucket(&paths.relays[r], t)), acc);
        }
        for (i, &l) in self.lines.iter().enumerate() {
            let c = &paths.circuits[l];
            let op = format!("op{i}");
            net.client(&op, acc);
            let path: Vec<String> = c.path.iter().map(|&r| relay_name(r)).collect();
            let p: Vec<&str> = path.iter().map(|s| s.as_str()).collect();
            net.circuit(
                CircuitSpec::new(&format!("c{i}"), &op, &p, traffic)
                    .start(Dur::from_secs_f64(self.starts_s[i]))
                    .trace(true),
            );
        }
        net
    }

    /// One-way propagation delay client ← exit (three hops of `rtt`/2).
    pub fn one_way(&self) -> f64 {
        1.5 * self.rtt_ms as f64 / 1e3
    }
}

/// A host of the dumbbell.
#[derive(Clone, Debug, Serialize)]
pub struct HostDraw {
    pub continent: Continent,
    /// One-way delay of the access link (s).
    pub delay_s: f64,
    /// Access rate (bits per second; relays: [`RELAY_ACCESS`]).
    pub rate_bps: u64,
}

/// The NA/EU dumbbell of Fig. 7: relays of the 100-relay file and one client
/// per circuit, each on its continent's switch; the two switches joined by a
/// trunk.
///
/// Delays: every host's access link gets a one-way delay of X/4, X drawn
/// from its continent's iPlane RTT distribution, so that two hosts of a
/// continent are (X₁ + X₂)/2 apart (median ≈ the iPlane median). The trunk's
/// one-way delay is `(median EU–NA − (median NA–NA + median EU–EU)/2)/2` =
/// 45.5 ms, so that a median NA host and a median EU host have the iPlane
/// EU–NA median of 132 ms. (nstor drew one delay per access link from RTT/2
/// and the router delay once per run; a pair of its hosts was therefore
/// about twice the iPlane RTT apart.)
#[derive(Clone, Debug, Serialize)]
pub struct DumbbellDraw {
    pub seed: u64,
    pub trunk_delay_s: f64,
    /// Chosen lines of the 100-relay file; the first `bulk` are bulk circuits.
    pub lines: Vec<usize>,
    pub bulk: usize,
    pub starts_s: Vec<f64>,
    /// Relays that carry a circuit, with their hosts.
    pub relays: Vec<(usize, HostDraw)>,
    /// The client of circuit i.
    pub clients: Vec<HostDraw>,
}

/// One-way trunk delay (s): see [`DumbbellDraw`].
pub fn trunk_delay() -> f64 {
    let (na, eu, x) = (
        RTT_NA_NA.quantile(0.5),
        RTT_EU_EU.quantile(0.5),
        RTT_EU_NA.quantile(0.5),
    );
    (x - (na + eu) / 2.0) / 2.0 / 1e3
}

impl DumbbellDraw {
    pub fn new(seed: u64, circuits: usize, bulk_fraction: f64, start_window: Dur) -> DumbbellDraw {
        let paths = TorpsPaths::hundred();
        let lines = choose_circuits(paths, circuits, seed, "dumbbell");
        let bulk = (bulk_fraction * circuits as f64).ceil() as usize;
        let mut rng = Rng::for_component(seed, "backtap-network/dumbbell/starts");
        let starts_s = lines
            .iter()
            .map(|_| rng.f64() * start_window.as_secs_f64())
            .collect();
        let mut used: Vec<usize> = lines.iter().flat_map(|&l| paths.circuits[l].path).collect();
        used.sort_unstable();
        used.dedup();
        let relays = used
            .into_iter()
            .map(|r| {
                let mut rng = Rng::for_component(seed, &format!("backtap-network/relay/{r}"));
                let continent = match paths.relays[r].continent.as_str() {
                    "NA" => Continent::Na,
                    "EU" => Continent::Eu,
                    // Neither side (AS, SA): EU with probability 0.68, as
                    // nstor assigns continents.
                    _ if rng.f64() <= 0.68 => Continent::Eu,
                    _ => Continent::Na,
                };
                let delay_s = continent.rtt_cdf().sample(&mut rng) / 4.0 / 1e3;
                (
                    r,
                    HostDraw {
                        continent,
                        delay_s,
                        rate_bps: RELAY_ACCESS.bps(),
                    },
                )
            })
            .collect();
        let clients = (0..circuits)
            .map(|i| {
                let mut rng = Rng::for_component(seed, &format!("backtap-network/client/{i}"));
                // Clients on either side with equal probability (nstor).
                let continent = if rng.f64() < 0.5 {
                    Continent::Na
                } else {
                    Continent::Eu
                };
                let delay_s = continent.rtt_cdf().sample(&mut rng) / 4.0 / 1e3;
                let mbit = continent.access_cdf().sample(&mut rng);
                HostDraw {
                    continent,
                    delay_s,
                    rate_bps: (mbit * 1e6).round() as u64,
                }
            })
            .collect();
        DumbbellDraw {
            seed,
            trunk_delay_s: trunk_delay(),
            lines,
            bulk,
            starts_s,
            relays,
            clients,
        }
    }

    fn relay_host(&self, r: usize) -> &HostDraw {
        &self
            .relays
            .iter()
            .find(|x| x.0 == r)
            .expect("a relay of a chosen circuit")
            .1
    }

    /// Whether circuit `i` is a bulk circuit.
    pub fn is_bulk(&self, i: usize) -> bool {
        i < self.bulk
    }

    /// Propagation RTT of circuit `i`: client → guard → middle → exit and back.
    pub fn e2e_rtt(&self, i: usize) -> f64 {
        let paths = TorpsPaths::hundred();
        let c = &paths.circuits[self.lines[i]];
        let mut hosts = vec![&self.clients[i]];
        hosts.extend(c.path.iter().map(|&r| self.relay_host(r)));
        let one_way: f64 = hosts
            .windows(2)
            .map(|w| {
                w[0].delay_s
                    + w[1].delay_s
                    + if w[0].continent != w[1].continent {
                        self.trunk_delay_s
                    } else {
                        0.0
                    }
            })
            .sum();
        2.0 * one_way
    }

    /// The network for transport `t` (circuits not traced: requests only).
    pub fn net(&self, t: &Transport) -> TorNet {
        let paths = TorpsPaths::hundred();
        let mut cfg = t.config();
        cfg.response_delay = RESPONSE_DELAY;
        cfg.queue_interval = None;
        let mut net = TorNet::with_config(cfg);
        net.trunk(
            Continent::Na.switch(),
            Continent::Eu.switch(),
            TRUNK_RATE,
            Dur::from_secs_f64(self.trunk_delay_s),
            Limit::Packets(1000),
        );
        for (r, h) in &self.relays {
            let acc = Access::new(Rate::from_bps(h.rate_bps), Dur::from_secs_f64(h.delay_s))
                .queue(ACCESS_QUEUE);
            net.relay_at(
                &relay_name(*r),
                h.continent.switch(),
                Some(bucket(&paths.relays[*r], t)),
                acc,
            );
        }
        for (i, &l) in self.lines.iter().enumerate() {
            let h = &self.clients[i];
            let op = format!("op{i}");
            let acc = Access::new(Rate::from_bps(h.rate_bps), Dur::from_secs_f64(h.delay_s))
                .queue(ACCESS_QUEUE);
            net.client_at(&op, h.continent.switch(), acc);
            let path: Vec<String> = paths.circuits[l]
                .path
                .iter()
                .map(|&r| relay_name(r))
                .collect();
            let p: Vec<&str> = path.iter().map(|s| s.as_str()).collect();
            let traffic = if self.is_bulk(i) { bulk() } else { web() };
            net.circuit(
                CircuitSpec::new(&format!("c{i}"), &op, &p, traffic)
                    .start(Dur::from_secs_f64(self.starts_s[i])),
            );
        }
        net
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_inverse_transform() {
        assert_eq!(RTT_NA_NA.quantile(0.0), 11.0);
        assert_eq!(RTT_NA_NA.quantile(0.5), 45.0);
        assert_eq!(RTT_NA_NA.quantile(1.0), 148.0);
        assert!((RTT_NA_NA.quantile(0.125) - 20.0).abs() < 1e-9);
        assert!((AKAMAI_DE.quantile(0.14) - 4.0).abs() < 1e-9);
        let mut rng = Rng::from_seed(1);
        let mut xs: Vec<f64> = (0..20_000).map(|_| RTT_EU_NA.sample(&mut rng)).collect();
        xs.sort_by(f64::total_cmp);
        assert!((xs[10_000] - 132.0).abs() < 2.0, "{}", xs[10_000]);
        assert!((xs[5_000] - 117.0).abs() < 2.0, "{}", xs[5_000]);
        assert!((trunk_delay() - 0.0455).abs() < 1e-12);
    }

    #[test]
    fn draws_do_not_depend_on_the_transport() {
        let a = DumbbellDraw::new(3, 375, 0.1, Dur::from_secs(30));
        let b = DumbbellDraw::new(3, 375, 0.1, Dur::from_secs(30));
        assert_eq!(a.lines, b.lines);
        assert_eq!(a.bulk, 38);
        assert!(a.relays.len() <= 85 && a.relays.len() > 60);
        let c = DumbbellDraw::new(4, 375, 0.1, Dur::from_secs(30));
        assert_ne!(a.lines, c.lines);
        let rtt: Vec<f64> = (0..375).map(|i| a.e2e_rtt(i)).collect();
        assert!(rtt.iter().all(|&r| r > 0.02 && r < 1.5), "{rtt:?}");
        let s = StarDraw::new(1, 100, Dur::from_millis(80), Dur::from_secs(30));
        assert_eq!(s.lines.len(), 100);
        assert!(s.relays.len() <= 45);
    }
}
