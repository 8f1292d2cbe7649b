//! Renders a set of demo charts into a directory (default `/tmp/plot-demo`).
//!
//! ```sh
//! cargo run -p hopwise-plot --example demo -- /tmp/plot-demo
//! ```

use std::path::PathBuf;

use hopwise_plot::{cdf_points, histogram, BarChart, Chart, Figure, Series};

/// Small deterministic PRNG (xorshift64*) so the demo needs no dependencies.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Approximately normal (sum of uniforms).
    fn normal(&mut self) -> f64 {
        (0..6).map(|_| self.next_f64()).sum::<f64>() - 3.0
    }
}

fn time_series(rng: &mut Rng) -> Chart {
    let n = 120_000;
    let dt = 60.0 / n as f64;
    // AIMD-like sawtooth with occasional spikes.
    let mut cwnd = 10.0;
    let mut a = Vec::with_capacity(n);
    for i in 0..n {
        cwnd += 0.004;
        if cwnd > 120.0 || rng.next_f64() < 0.0001 {
            cwnd *= 0.5;
        }
        let spike = if i % 29_000 == 14_000 { 90.0 } else { 0.0 };
        a.push((i as f64 * dt, cwnd + spike));
    }
    let b: Vec<(f64, f64)> = (0..n)
        .map(|i| {
            let t = i as f64 * dt;
            (t, 60.0 + 25.0 * (t / 6.0).sin() + 3.0 * rng.normal())
        })
        .collect();
    // A per-second mean with a ±1 sd band, with a gap (NaN) at 30 s.
    let mean: Vec<(f64, f64)> = (0..=60)
        .map(|s| {
            let t = f64::from(s);
            let y = if s == 30 { f64::NAN } else { 45.0 + 0.5 * t };
            (t, y)
        })
        .collect();
    let band: Vec<(f64, f64)> = mean.iter().map(|&(_, y)| (y - 8.0, y + 8.0)).collect();
    Chart::new("Congestion window, 3 flows (120k samples each)")
        .x_label("time (s)")
        .y_label("cwnd (packets)")
        .series(Series::line("cubic", a))
        .series(Series::line("bbr", b).dashed())
        .series(Series::line("mean ± sd", mean).with_band(band))
        .hline(100.0, "BDP = 100 pkt")
        .vline(20.0, "link change")
}

fn sweep() -> Chart {
    let buffers = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0];
    let cubic: Vec<(f64, f64)> = buffers
        .iter()
        .map(|&b: &f64| (b, 100.0 * (1.0 - (-1.6 * b).exp())))
        .collect();
    let bbr: Vec<(f64, f64)> = buffers
        .iter()
        .map(|&b: &f64| (b, 96.0 - 4.0 / (b + 0.5)))
        .collect();
    let err = |p: &[(f64, f64)], e: f64| p.iter().map(|&(_, y)| (y - e, y + e)).collect();
    let cubic_err = err(&cubic, 6.0);
    let bbr_err = err(&bbr, 2.5);
    Chart::new("Throughput vs buffer size")
        .x_label("buffer (× BDP)")
        .y_label("throughput (Mbit/s)")
        .series(Series::line_points("cubic", cubic).with_error_bars(cubic_err))
        .series(Series::line_points("bbr", bbr).with_error_bars(bbr_err))
        .band_x(0.0, 0.75, "shallow")
        .band_x(0.75, 3.0, "moderate")
        .band_x(3.0, 9.0, "deep buffers")
        .vline(1.0, "1 BDP")
}

fn log_chart() -> Chart {
    let xs: Vec<f64> = (0..=24)
        .map(|i| 10f64.powf(-3.0 + f64::from(i) * 0.25))
        .collect();
    let delay: Vec<(f64, f64)> = xs.iter().map(|&x| (x, 0.5 + 40.0 * x.sqrt())).collect();
    let loss: Vec<(f64, f64)> = xs.iter().map(|&x| (x, 200.0 / (1.0 + x))).collect();
    Chart::new("Queueing delay vs offered load (log-log)")
        .x_label("offered load (Gbit/s)")
        .y_label("delay (ms)")
        .log_x(true)
        .log_y(true)
        .series(Series::line_points("delay", delay))
        .series(Series::line("loss-based", loss).dashed())
        .hline(10.0, "SLO 10 ms")
}

fn rtt_samples(rng: &mut Rng, base: f64, spread: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| base + spread * rng.next_f64().powi(3) * 10.0 + rng.normal().abs())
        .collect()
}

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/plot-demo"));
    std::fs::create_dir_all(&dir)?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);

    let ts = time_series(&mut rng);
    ts.write_svg(dir.join("timeseries.svg"))?;
    let sw = sweep();
    sw.write_svg(dir.join("sweep.svg"))?;
    let lg = log_chart();
    lg.write_svg(dir.join("logx.svg"))?;

    let cubic_rtt = rtt_samples(&mut rng, 20.0, 4.0, 5000);
    let bbr_rtt = rtt_samples(&mut rng, 20.0, 1.5, 5000);
    let hist = BarChart::new("RTT histogram (cubic)")
        .x_label("RTT (ms)")
        .y_label("samples")
        .group("cubic", histogram(&cubic_rtt, 20));
    hist.write_svg(dir.join("histogram.svg"))?;
    let grouped = BarChart::new("Goodput by scenario")
        .y_label("Mbit/s")
        .group(
            "cubic",
            vec![
                ("dumbbell".into(), 91.0),
                ("parking lot".into(), 64.0),
                ("wifi".into(), 38.5),
                ("lte".into(), 22.0),
            ],
        )
        .group(
            "bbr",
            vec![
                ("dumbbell".into(), 94.0),
                ("parking lot".into(), 71.0),
                ("wifi".into(), 45.0),
                ("lte".into(), 31.0),
            ],
        )
        .group(
            "reno",
            vec![
                ("dumbbell".into(), 88.0),
                ("parking lot".into(), 60.0),
                ("wifi".into(), 35.0),
            ],
        );
    grouped.write_svg(dir.join("grouped.svg"))?;

    let cdf = Chart::new("RTT CDF")
        .x_label("RTT (ms)")
        .y_label("fraction ≤ x")
        .y_range(0.0, 1.0)
        .series(Series::step("cubic", cdf_points(&cubic_rtt)))
        .series(Series::step("bbr", cdf_points(&bbr_rtt)))
        .hline(0.99, "p99");
    cdf.write_svg(dir.join("cdf.svg"))?;

    Figure::new("Run summary: dumbbell, 3 flows", 2)
        .panel(ts.clone().size(640, 360))
        .panel(sw.clone().size(640, 360))
        .panel(hist.clone().size(640, 360))
        .panel(cdf.clone().size(640, 360))
        .write_svg(dir.join("figure.svg"))?;

    Chart::new("Empty <chart> & \"friends\"")
        .x_label("x")
        .y_label("y")
        .series(Series::line("nothing", vec![(f64::NAN, 1.0)]))
        .write_svg(dir.join("empty.svg"))?;
    Chart::new("All x equal")
        .series(Series::points(
            "p",
            vec![(5.0, 1.0), (5.0, 2.0), (5.0, 3.0)],
        ))
        .write_svg(dir.join("degenerate.svg"))?;
    Chart::new("Small")
        .size(320, 200)
        .x_label("time (s)")
        .y_label("Mbit/s")
        .series(Series::line(
            "a very long legend name for a series",
            vec![(0.0, 1.0), (1.0, 2e6)],
        ))
        .series(Series::line("b", vec![(0.0, 2.0), (1.0, 1e6)]))
        .write_svg(dir.join("small.svg"))?;

    println!("wrote demo SVGs to {}", dir.display());
    Ok(())
}
