//! The scale benchmark: a Tor-sized network, by default 6000
//! relays and 20 000 concurrent circuits for 60 simulated seconds, run by
//! `hopwise bench --tor`. It reports the wall time of setting the network
//! up and of running it, events per second and peak memory.
//!
//! The network is the NA/EU dumbbell of Fig. 7 ([`super::dumbbell`]) grown
//! to Tor's size; every draw is a function of the seed and a component name
//! (as in [`super::topo`]), so every transport sees the same network.
//!
//! * **Relays**: consensus bandwidth (token-bucket rate = burst, as nstor)
//!   drawn from the 85 relays of the 100-relay TorPS file, which seed 002
//!   built by scaling and sampling the 2015-08-04 consensus: inverse
//!   transform of their empirical distribution, interpolated linearly in
//!   log-bandwidth between order statistics (100 KB/s to 13.3 MB/s, median
//!   1 MB/s, mean ≈ 2.7 MB/s; 6000 relays ≈ 16 GB/s in all, about what
//!   Tor's relays advertised in 2015). Continent: that of a relay of the
//!   file drawn uniformly (AS/SA relays: EU with probability 0.68, as in the
//!   dumbbell). Access: 1 Gbit/s, one-way delay X/4 with X from the
//!   continent's iPlane RTT distribution; the relay's bucket refills as the
//!   transport's relays do (10 ms BackTap, 100 ms TCP-based).
//! * **Clients**: one per circuit, NA or EU with equal probability, access
//!   rate from Akamai's US or German distribution, delay as relays.
//! * **Paths**: three distinct relays, each drawn with probability
//!   proportional to its bandwidth (Tor's bandwidth-weighted selection,
//!   without position weights or flags); the exit serves the requests
//!   (nstor's pseudo server, exponential response delay of mean 20 ms).
//! * **Traffic**: the first 10 % of the circuits bulk (5 MiB back to back),
//!   the rest web (320 KiB, think time uniform 1–20 s); first requests
//!   uniform over the first 30 s, or over the first half of a run shorter
//!   than 60 s.
//! * **Trunk** between the continents: 10 Gbit/s per 100 relays (the
//!   dumbbell's 10 Gbit/s for its 100 relays), so that it does not become
//!   the bottleneck of a larger network; 10 000-packet drop-tail queue.

use super::topo::{
    bulk, trunk_delay, web, Continent, ACCESS_QUEUE, RELAY_ACCESS, RESPONSE_DELAY, TRUNK_RATE,
};
use super::{transport, Transport};
use hopwise_experiment::stats::quantile;
use hopwise_proto::rng::Rng;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::spec::Limit;
use hopwise_sim::Sim;
use hopwise_tor::{Access, BucketSpec, CircuitSpec, TorNet, TorpsPaths};
use serde::Serialize;

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleParams {
    /// A transport or variant key of [`super::transport`] (`backtap`, `vanilla`, ...).
    pub transport: String,
    pub seed: u64,
    pub relays: usize,
    pub circuits: usize,
    /// Simulated seconds.
    pub secs: u64,
    /// Fraction of bulk circuits.
    pub bulk_fraction: f64,
    /// Build every circuit but never start its application: the network's
    /// memory with its circuits and connections idle.
    pub idle: bool,
}

impl ScaleParams {
    /// The Tor-scale size: 6000 relays, 20 000 circuits, 60 s, BackTap.
    pub fn tor_sized() -> ScaleParams {
        ScaleParams::new("backtap", 6000, 20_000, 60)
    }

    pub fn new(transport: &str, relays: usize, circuits: usize, secs: u64) -> ScaleParams {
        ScaleParams {
            transport: transport.into(),
            seed: 1,
            relays,
            circuits,
            secs,
            bulk_fraction: 0.1,
            idle: false,
        }
    }

    /// Window of the circuits' first requests: 30 s, at most half the run.
    pub fn start_window_s(&self) -> f64 {
        (self.secs as f64 / 2.0).min(30.0)
    }

    /// The parameters' errors, named by their `bench --tor` flags; also
    /// run by [`run_with`], so a caller may check before printing anything.
    pub fn check(&self) -> anyhow::Result<Transport> {
        anyhow::ensure!(
            self.relays >= 3,
            "--relays {}: at least 3 relays are needed for a circuit",
            self.relays
        );
        anyhow::ensure!(self.circuits >= 1, "--circuits 0: at least one circuit");
        anyhow::ensure!(self.secs >= 1, "--secs 0: at least one simulated second");
        // Far beyond what fits in memory or a day of wall time, and below
        // the overflow of the nanosecond clock (about 584 years).
        anyhow::ensure!(
            self.relays <= 1_000_000,
            "--relays {} is too many (at most 1 000 000)",
            self.relays
        );
        anyhow::ensure!(
            self.circuits <= 10_000_000,
            "--circuits {} is too many (at most 10 000 000)",
            self.circuits
        );
        anyhow::ensure!(
            self.secs <= 1_000_000,
            "--secs {} is too long (at most 1 000 000 simulated seconds)",
            self.secs
        );
        anyhow::ensure!(
            (0.0..=1.0).contains(&self.bulk_fraction),
            "bulk fraction must be in [0, 1]"
        );
        transport(&self.transport).ok_or_else(|| {
            anyhow::anyhow!(
                "--transport: unknown transport `{}` (backtap, vanilla, pctcp, n23, tor-vegas or a variant such as backtap-100ms)",
                self.transport
            )
        })
    }
}

/// A relay or client host.
#[derive(Clone, Debug, Serialize)]
pub struct Host {
    pub continent: Continent,
    /// One-way delay of the access link (s).
    pub delay_s: f64,
    /// Access rate (bit/s).
    pub rate_bps: u64,
}

/// The drawn network (transport-independent).
#[derive(Clone, Debug, Serialize)]
pub struct ScaleDraw {
    pub seed: u64,
    /// Bucket rate (= burst) of each relay, bytes per second.
    pub bandwidth: Vec<u64>,
    pub relays: Vec<Host>,
    pub clients: Vec<Host>,
    /// Guard, middle, exit of each circuit (indexes into `relays`).
    pub paths: Vec<[usize; 3]>,
    /// Circuits `0..bulk` are bulk.
    pub bulk: usize,
    pub starts_s: Vec<f64>,
    pub trunk_rate_bps: u64,
}

/// Inverse transform of the empirical distribution of `sorted` (ascending,
/// positive), linear in log between order statistics.
fn log_quantile(sorted: &[f64], u: f64) -> f64 {
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    let x = u.clamp(0.0, 1.0) * (n - 1) as f64;
    let i = (x.floor() as usize).min(n - 2);
    let f = x - i as f64;
    (sorted[i].ln() * (1.0 - f) + sorted[i + 1].ln() * f).exp()
}

/// A host's continent-dependent delay and (clients) access rate.
fn host(rng: &mut Rng, continent: Continent, client: bool) -> Host {
    let delay_s = continent.rtt_cdf().sample(rng) / 4.0 / 1e3;
    let rate_bps = if client {
        (continent.access_cdf().sample(rng) * 1e6).round() as u64
    } else {
        RELAY_ACCESS.bps()
    };
    Host {
        continent,
        delay_s,
        rate_bps,
    }
}

impl ScaleDraw {
    pub fn new(p: &ScaleParams) -> ScaleDraw {
        let seed = p.seed;
        let file = TorpsPaths::hundred();
        let mut bws: Vec<f64> = file.relays.iter().map(|r| r.bandwidth as f64).collect();
        bws.sort_by(f64::total_cmp);
        let mut bandwidth = Vec::with_capacity(p.relays);
        let mut relays = Vec::with_capacity(p.relays);
        for i in 0..p.relays {
            let mut rng = Rng::for_component(seed, &format!("backtap-network/scale/relay/{i}"));
            bandwidth.push(log_quantile(&bws, rng.f64()).round() as u64);
            let like = &file.relays[rng.below(file.relays.len() as u64) as usize];
            let continent = match like.continent.as_str() {
                "NA" => Continent::Na,
                "EU" => Continent::Eu,
                _ if rng.f64() <= 0.68 => Continent::Eu,
                _ => Continent::Na,
            };
            relays.push(host(&mut rng, continent, false));
        }
        // Bandwidth-weighted choice of three distinct relays.
        let cum: Vec<f64> = bandwidth
            .iter()
            .scan(0.0, |s, &b| {
                *s += b as f64;
                Some(*s)
            })
            .collect();
        let total = *cum.last().expect("at least one relay");
        let mut rng = Rng::for_component(seed, "backtap-network/scale/paths");
        let mut pick = || {
            let x = rng.f64() * total;
            cum.partition_point(|&c| c <= x).min(cum.len() - 1)
        };
        let paths = (0..p.circuits)
            .map(|_| {
                let mut path = [usize::MAX; 3];
                for k in 0..3 {
                    path[k] = loop {
                        let r = pick();
                        if !path[..k].contains(&r) {
                            break r;
                        }
                    };
                }
                path
            })
            .collect();
        let clients = (0..p.circuits)
            .map(|i| {
                let mut rng =
                    Rng::for_component(seed, &format!("backtap-network/scale/client/{i}"));
                let continent = if rng.f64() < 0.5 {
                    Continent::Na
                } else {
                    Continent::Eu
                };
                host(&mut rng, continent, true)
            })
            .collect();
        let mut rng = Rng::for_component(seed, "backtap-network/scale/starts");
        let starts_s = (0..p.circuits)
            .map(|_| match p.idle {
                // After the end: the application never starts.
                true => p.secs as f64 + 1.0,
                false => rng.f64() * p.start_window_s(),
            })
            .collect();
        ScaleDraw {
            seed,
            bandwidth,
            relays,
            clients,
            paths,
            bulk: (p.bulk_fraction * p.circuits as f64).ceil() as usize,
            starts_s,
            trunk_rate_bps: TRUNK_RATE.bps() * (p.relays as u64 / 100).max(1),
        }
    }

    /// The network for transport `t` (circuits not traced: requests only).
    pub fn net(&self, t: &Transport) -> TorNet {
        let mut cfg = t.config();
        cfg.response_delay = RESPONSE_DELAY;
        cfg.queue_interval = None;
        let mut net = TorNet::with_config(cfg);
        net.trunk(
            Continent::Na.switch(),
            Continent::Eu.switch(),
            Rate::from_bps(self.trunk_rate_bps),
            Dur::from_secs_f64(trunk_delay()),
            Limit::Packets(10_000),
        );
        let access = |h: &Host| {
            Access::new(Rate::from_bps(h.rate_bps), Dur::from_secs_f64(h.delay_s))
                .queue(ACCESS_QUEUE)
        };
        for (i, h) in self.relays.iter().enumerate() {
            net.relay_at(
                &format!("r{i}"),
                h.continent.switch(),
                Some(BucketSpec::new(self.bandwidth[i]).refill(t.refill.refill())),
                access(h),
            );
        }
        for (i, (h, path)) in self.clients.iter().zip(&self.paths).enumerate() {
            let op = format!("op{i}");
            net.client_at(&op, h.continent.switch(), access(h));
            let names: Vec<String> = path.iter().map(|r| format!("r{r}")).collect();
            let p: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
            let traffic = if i < self.bulk { bulk() } else { web() };
            net.circuit(
                CircuitSpec::new(&format!("c{i}"), &op, &p, traffic)
                    .start(Dur::from_secs_f64(self.starts_s[i])),
            );
        }
        net
    }
}

/// What a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleReport {
    pub params: ScaleParams,
    pub start_window_s: f64,
    /// Relays that carry at least one circuit (the others are idle hosts).
    pub relays_used: usize,
    pub bulk_circuits: usize,
    /// Sum of the relays' bucket rates (bytes per second).
    #[serde(rename = "relay_capacity_Bps")]
    pub relay_capacity: f64,
    pub trunk_rate_bps: u64,
    /// Wall time of drawing the network, building the simulation and
    /// installing the Tor agents, and of running it (s).
    pub setup_wall_s: f64,
    pub run_wall_s: f64,
    pub simulated_s: f64,
    pub events: u64,
    /// Packets put on a link (one per link a packet crossed, lost ones
    /// included), and their rate per wall second of the run.
    pub packet_hops: u64,
    pub packet_hops_per_s: f64,
    /// Events per wall second of the run, and simulated seconds per wall second.
    pub events_per_s: f64,
    pub sim_s_per_wall_s: f64,
    /// Peak resident memory of the process (VmHWM, bytes) after the setup
    /// and at the end; `None` where `/proc/self/status` does not exist.
    pub peak_rss_setup_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    pub requests_issued: usize,
    pub requests_completed: usize,
    pub bulk_completed: usize,
    pub web_completed: usize,
    /// Median time to last byte of completed web requests (s).
    pub web_ttlb_median_s: f64,
    pub goodput_bytes: u64,
    pub wire_bytes: u64,
    pub corrupt_bytes: u64,
    /// Written as 16 hex digits, as `hopwise sim` writes its hash.
    #[serde(serialize_with = "hex_u64")]
    pub event_hash: u64,
}

/// Peak resident set size of this process (Linux: `VmHWM` of
/// `/proc/self/status`), in bytes.
pub fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Builds and runs the network to its end.
pub fn run(p: &ScaleParams) -> anyhow::Result<ScaleReport> {
    run_with(p, &mut |sim| sim.run())
}

/// Builds the network and lets `drive` run the simulation to its end (the
/// CLI drives it in steps to show progress).
// Wall time is what this benchmark measures.
#[allow(clippy::disallowed_methods)]
pub fn run_with(p: &ScaleParams, drive: &mut dyn FnMut(&mut Sim)) -> anyhow::Result<ScaleReport> {
    let t = p.check()?;
    let t0 = std::time::Instant::now();
    let draw = ScaleDraw::new(p);
    let net = draw.net(&t);
    let name = format!("scale-{}-{}r-{}c", t.key, p.relays, p.circuits);
    let sc = net
        .scenario(&name, p.seed, Dur::from_secs(p.secs))
        .map_err(anyhow::Error::msg)?;
    let mut sim = Sim::new(&sc).map_err(anyhow::Error::msg)?;
    let inst = net.install(&mut sim).map_err(anyhow::Error::msg)?;
    drop(net);
    let setup_wall_s = t0.elapsed().as_secs_f64();
    let peak_rss_setup_bytes = peak_rss();

    let t1 = std::time::Instant::now();
    drive(&mut sim);
    let run_wall_s = t1.elapsed().as_secs_f64();
    let packet_hops = sim.transmissions();
    anyhow::ensure!(
        sim.now() >= sim.end_time(),
        "the simulation stopped before its end"
    );

    let res = inst.results(&sim);
    let mut used: Vec<usize> = draw.paths.iter().flatten().copied().collect();
    used.sort_unstable();
    used.dedup();
    let done = |range: std::ops::Range<usize>| -> usize {
        res.circuits[range].iter().map(|c| c.completed()).sum()
    };
    let web_ttlb: Vec<f64> = res.circuits[draw.bulk.min(res.circuits.len())..]
        .iter()
        .flat_map(|c| c.requests.iter().filter_map(|r| r.ttlb))
        .map(|d| d.as_secs_f64())
        .collect();
    let n = res.circuits.len();
    let bulk = draw.bulk.min(n);
    Ok(ScaleReport {
        params: p.clone(),
        start_window_s: p.start_window_s(),
        relays_used: used.len(),
        bulk_circuits: bulk,
        relay_capacity: draw.bandwidth.iter().map(|&b| b as f64).sum(),
        trunk_rate_bps: draw.trunk_rate_bps,
        setup_wall_s,
        run_wall_s,
        simulated_s: p.secs as f64,
        events: res.events,
        packet_hops,
        packet_hops_per_s: packet_hops as f64 / run_wall_s.max(1e-9),
        events_per_s: res.events as f64 / run_wall_s.max(1e-9),
        sim_s_per_wall_s: p.secs as f64 / run_wall_s.max(1e-9),
        peak_rss_setup_bytes,
        peak_rss_bytes: peak_rss(),
        requests_issued: res.circuits.iter().map(|c| c.requests.len()).sum(),
        requests_completed: done(0..n),
        bulk_completed: done(0..bulk),
        web_completed: done(bulk..n),
        web_ttlb_median_s: quantile(&web_ttlb, 0.5),
        goodput_bytes: res.goodput_bytes(),
        wire_bytes: res.wire_bytes,
        corrupt_bytes: res.circuits.iter().map(|c| c.corrupt).sum(),
        event_hash: res.event_hash,
    })
}

fn hex_u64<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:016x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws() {
        let p = ScaleParams::new("backtap", 300, 1000, 60);
        let a = ScaleDraw::new(&p);
        let b = ScaleDraw::new(&p);
        assert_eq!(a.paths, b.paths);
        assert_eq!(a.bandwidth, b.bandwidth);
        assert_eq!(a.bulk, 100);
        assert_eq!(p.start_window_s(), 30.0);
        assert_eq!(ScaleParams::new("backtap", 3, 1, 10).start_window_s(), 5.0);
        assert!(a.starts_s.iter().all(|&s| (0.0..30.0).contains(&s)));
        for path in &a.paths {
            assert!(path[0] != path[1] && path[1] != path[2] && path[0] != path[2]);
            assert!(path.iter().all(|&r| r < 300));
        }
        // Bandwidths within the file's range; the median near its 1 MB/s.
        assert!(a
            .bandwidth
            .iter()
            .all(|&b| (100_000..=13_400_000).contains(&b)));
        let mut bw = a.bandwidth.clone();
        bw.sort_unstable();
        assert!((500_000..2_000_000).contains(&bw[150]), "{}", bw[150]);
        // Bandwidth-weighted selection: the fastest tenth of the relays
        // carries well over a tenth of the hops.
        let cut = bw[270];
        let fast = a
            .paths
            .iter()
            .flatten()
            .filter(|&&r| a.bandwidth[r] >= cut)
            .count();
        assert!(fast > 3000 * 3 / 10, "{fast}");
        assert!(a.clients.iter().all(|c| c.rate_bps >= 1_000_000));
        let c = ScaleDraw::new(&ScaleParams {
            seed: 2,
            ..p.clone()
        });
        assert_ne!(a.paths, c.paths);
    }

    #[test]
    fn log_quantiles() {
        let v = [1.0, 100.0];
        assert!((log_quantile(&v, 0.5) - 10.0).abs() < 1e-9);
        assert_eq!(log_quantile(&v, 0.0), 1.0);
        assert!((log_quantile(&v, 1.0) - 100.0).abs() < 1e-9);
        assert_eq!(log_quantile(&[7.0], 0.3), 7.0);
    }

    #[test]
    fn tiny_network_runs() {
        for t in ["backtap", "vanilla"] {
            let p = ScaleParams::new(t, 20, 50, 5);
            let r = run(&p).unwrap();
            assert!(r.events > 0, "{t}");
            assert!(r.requests_completed > 0, "{t}: {r:?}");
            assert!(r.web_completed > 0, "{t}: {r:?}");
            assert_eq!(r.corrupt_bytes, 0, "{t}");
            assert_eq!(r.bulk_circuits, 5);
            assert!(r.goodput_bytes > 0 && r.wire_bytes > r.goodput_bytes);
            if cfg!(target_os = "linux") {
                assert!(r.peak_rss_bytes.unwrap() >= r.peak_rss_setup_bytes.unwrap());
            }
        }
        assert!(run(&ScaleParams::new("nope", 20, 50, 5)).is_err());
    }

    #[test]
    fn packet_hops_count_link_transmissions_and_idle_circuits_carry_nothing() {
        for t in ["backtap", "vanilla"] {
            let busy = run(&ScaleParams::new(t, 20, 50, 5)).unwrap();
            // A packet crosses at least its two access links.
            assert!(
                busy.packet_hops > busy.goodput_bytes / 1500 * 2,
                "{t}: {busy:?}"
            );
            assert!(busy.packet_hops < busy.events, "{t}");
            let idle = run(&ScaleParams {
                idle: true,
                ..ScaleParams::new(t, 20, 50, 5)
            })
            .unwrap();
            assert_eq!((idle.requests_issued, idle.goodput_bytes), (0, 0), "{t}");
            assert!(idle.packet_hops < busy.packet_hops / 100, "{t}: {idle:?}");
        }
    }
}
