//! Renders awkward inputs (many series, many categories, negative values,
//! narrow log ranges) into a directory for visual inspection.
//!
//! ```sh
//! cargo run -p hopwise-plot --example edge_cases -- /tmp/plot-edge
//! ```

use std::path::PathBuf;

use hopwise_plot::{BarChart, Chart, Figure, Series};

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/plot-edge"));
    std::fs::create_dir_all(&dir)?;

    let mut many = Chart::new("Nine flows with long names")
        .x_label("time (s)")
        .y_label("throughput (Mbit/s)");
    for k in 0..9 {
        let pts = (0..200)
            .map(|i| {
                let t = f64::from(i) * 0.1;
                (t, f64::from(k) * 10.0 + 5.0 * (t + f64::from(k)).sin())
            })
            .collect();
        many.push_series(Series::line(format!("flow {k} (cubic, 40 ms RTT)"), pts));
    }
    many.write_svg(dir.join("many_series.svg"))?;

    let bins: Vec<(String, f64)> = (0..120)
        .map(|i| {
            (
                format!("{}-{} ms", i * 5, i * 5 + 5),
                f64::from((i * 37) % 50),
            )
        })
        .collect();
    BarChart::new("120 categories")
        .x_label("delay bucket")
        .y_label("count")
        .group("delay", bins)
        .write_svg(dir.join("many_bars.svg"))?;

    Chart::new("All negative, explicit narrow log x")
        .log_x(true)
        .x_range(3.0, 97.0)
        .y_label("delta (ms)")
        .series(Series::points(
            "delta",
            (1..100)
                .map(|i| (f64::from(i), -f64::from(i) * 0.37 - 2.0))
                .collect(),
        ))
        .write_svg(dir.join("negative_logx.svg"))?;

    let tiny = |t: &str| {
        Chart::new(t).size(300, 200).series(Series::line(
            "s",
            (0..50)
                .map(|i| (f64::from(i) * 1e-5, f64::from(i % 7) * 2e-4))
                .collect(),
        ))
    };
    Figure::new("Small panels, tiny values", 3)
        .panel(tiny("a"))
        .panel(tiny("b").log_y(true))
        .panel(
            BarChart::new("c")
                .size(300, 200)
                .group("x", vec![("a".into(), -1.5e9), ("b".into(), 2.5e9)]),
        )
        .panel(tiny("d with a really really long title that will not fit"))
        .write_svg(dir.join("small_panels.svg"))?;
    println!("wrote edge-case SVGs to {}", dir.display());
    Ok(())
}
