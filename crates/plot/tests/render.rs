//! End-to-end tests: render charts, parse the SVG as XML and check what a
//! reader would see.

use hopwise_plot::ticks::{format_ticks, format_value, linear_ticks, log_ticks, nice_bounds};
use hopwise_plot::{cdf_points, decimate, histogram, BarChart, Chart, Figure, Series};
use roxmltree::{Document, Node};

fn parse(svg: &str) -> Document<'_> {
    match Document::parse(svg) {
        Ok(doc) => doc,
        Err(e) => panic!("invalid XML: {e}\n{svg}"),
    }
}

fn by_class<'a, 'i>(doc: &'a Document<'i>, class: &str) -> Vec<Node<'a, 'i>> {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some(class))
        .collect()
}

/// Text contents of all `<text>` elements below nodes with the given class.
fn texts_in(doc: &Document<'_>, class: &str) -> Vec<String> {
    by_class(doc, class)
        .iter()
        .flat_map(|g| g.descendants())
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or_default().to_string())
        .collect()
}

/// Subpaths of a polyline path `d` ("M1,2 3,4M5,6 7,8").
fn subpaths(d: &str) -> Vec<Vec<(f64, f64)>> {
    d.split('M')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.split_whitespace()
                .map(|tok| {
                    let (x, y) = tok.split_once(',').expect("x,y pair");
                    (x.parse().expect("x"), y.parse().expect("y"))
                })
                .collect()
        })
        .collect()
}

fn line_path<'a>(doc: &'a Document<'_>, series_index: usize) -> Option<&'a str> {
    let idx = series_index.to_string();
    let series = doc.descendants().find(|n| {
        n.attribute("class") == Some("series") && n.attribute("data-index") == Some(&idx)
    })?;
    series
        .children()
        .find(|n| n.attribute("class") == Some("line"))
        .and_then(|n| n.attribute("d"))
}

/// y pixel of the n-th horizontal reference line.
fn hline_y(doc: &Document<'_>, n: usize) -> f64 {
    let d = by_class(doc, "hline")[n].attribute("d").unwrap();
    subpaths(d.split('H').next().unwrap())[0][0].1
}

fn spiky_series(n: usize) -> Vec<(f64, f64)> {
    (0..n)
        .map(|i| {
            let base = ((i * 7919) % 101) as f64 / 10.0; // 0..10, noisy
            let y = match i {
                // Offsets keep the spikes away from pixel-column edges.
                _ if i == n / 3 + 123 => 500.0,
                _ if i == 2 * n / 3 + 77 => -300.0,
                _ => base,
            };
            (i as f64 * 0.001, y)
        })
        .collect()
}

#[test]
fn every_kind_of_output_is_well_formed_xml() {
    let pts: Vec<(f64, f64)> = (0..50).map(|i| (f64::from(i), f64::from(i * i))).collect();
    let band: Vec<(f64, f64)> = pts.iter().map(|&(_, y)| (y * 0.9, y * 1.1)).collect();
    let chart = Chart::new("all kinds")
        .x_label("x")
        .y_label("y")
        .series(Series::line("line", pts.clone()).with_band(band.clone()))
        .series(
            Series::step("step", pts.clone())
                .with_band(band.clone())
                .dashed(),
        )
        .series(Series::points("points", pts.clone()).color("tomato"))
        .series(Series::line_points("lp", pts.clone()).with_error_bars(band))
        .hline(100.0, "h")
        .vline(10.0, "v")
        .band_x(5.0, 15.0, "region")
        .band_x(f64::NEG_INFINITY, 2.0, "start");
    let bars = BarChart::new("bars")
        .group("a", vec![("x".into(), 1.0), ("y".into(), -2.0)])
        .group("b", vec![("x".into(), 3.0), ("z".into(), f64::NAN)]);
    let log = Chart::new("log")
        .log_x(true)
        .log_y(true)
        .series(Series::line("l", pts.clone()));
    let fig = Figure::new("fig", 2)
        .panel(chart.clone())
        .panel(bars.clone())
        .panel(log.clone());
    for svg in [chart.to_svg(), bars.to_svg(), log.to_svg(), fig.to_svg()] {
        let doc = parse(&svg);
        let root = doc.root_element();
        assert!(root.has_tag_name(("http://www.w3.org/2000/svg", "svg")));
        assert!(root.attribute("width").is_some() && root.attribute("viewBox").is_some());
        // Self-contained: no external references.
        assert!(
            !svg.contains("http://")
                || !svg
                    .replace("http://www.w3.org/2000/svg", "")
                    .contains("http://")
        );
        assert!(!svg.contains("<style") && !svg.contains("@import"));
    }
    // Panels in a figure get distinct clip-path ids.
    let fig_svg = fig.to_svg();
    let doc = parse(&fig_svg);
    let ids: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("id"))
        .collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(ids.len(), unique.len(), "duplicate ids: {ids:?}");
    assert_eq!(by_class(&doc, "panel").len(), 3);
}

#[test]
fn decimation_keeps_spikes_and_bounds_points() {
    let n = 200_000;
    let data = spiky_series(n);
    let width = 800;
    let svg = Chart::new("spiky")
        .size(width, 400)
        .series(Series::line("s", data))
        .hline(500.0, "max")
        .hline(-300.0, "min")
        .to_svg();
    let doc = parse(&svg);
    let d = line_path(&doc, 0).expect("line path");
    let pts: Vec<(f64, f64)> = subpaths(d).into_iter().flatten().collect();
    assert!(
        pts.len() <= 4 * (width as usize + 2),
        "{} points emitted",
        pts.len()
    );
    assert!(pts.len() > 800, "suspiciously few points: {}", pts.len());
    let top = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let bottom = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    // Pixel y grows downwards: the max spike is the smallest y.
    assert!(
        (top - hline_y(&doc, 0)).abs() <= 0.1,
        "max spike lost: {top}"
    );
    assert!(
        (bottom - hline_y(&doc, 1)).abs() <= 0.1,
        "min spike lost: {bottom}"
    );
    // Small output: limited precision and no more than ~4 points per pixel.
    assert!(svg.len() < 80_000, "svg is {} bytes", svg.len());
}

#[test]
fn decimate_function_keeps_extremes() {
    let data = spiky_series(100_000);
    let out = decimate(&data, 0.0, 100.0, 500);
    assert!(out.len() <= 4 * 502);
    assert!(out.contains(&(data[100_000 / 3 + 123].0, 500.0)));
    assert!(out.contains(&(data[200_000 / 3 + 77].0, -300.0)));
    // First and last points survive, order is preserved.
    assert_eq!(out.first(), data.first());
    assert_eq!(out.last(), data.last());
    assert!(out.windows(2).all(|w| w[0].0 <= w[1].0));
}

#[test]
fn nan_and_infinite_points_break_the_line() {
    let pts = vec![
        (0.0, 1.0),
        (1.0, 2.0),
        (2.0, f64::NAN),
        (3.0, 3.0),
        (f64::INFINITY, 1.0),
        (4.0, 4.0),
        (5.0, 5.0),
    ];
    let svg = Chart::new("nan").series(Series::line("s", pts)).to_svg();
    assert!(!svg.contains("NaN") && !svg.contains("inf"));
    let doc = parse(&svg);
    let parts = subpaths(line_path(&doc, 0).unwrap());
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert_eq!(parts[0].len(), 2);
    assert_eq!(parts[1].len(), 2);
    // The isolated point (3, 3) is still visible as a dot.
    assert_eq!(by_class(&doc, "dots").len(), 1);
    // The axis range ignores non-finite values: x ticks stay within 0..5.
    let xt = texts_in(&doc, "x-ticks");
    assert_eq!(xt.first().map(String::as_str), Some("0"));
    assert_eq!(xt.last().map(String::as_str), Some("5"));
}

#[test]
fn all_nan_series_and_log_axis_with_non_positive_values() {
    let svg = Chart::new("nan only")
        .series(Series::line("s", vec![(f64::NAN, f64::NAN); 10]))
        .to_svg();
    let doc = parse(&svg);
    assert_eq!(by_class(&doc, "no-data").len(), 1);
    assert!(texts_in(&doc, "legend").contains(&"s (no data)".to_string()));

    let svg = Chart::new("log")
        .log_y(true)
        .series(Series::line(
            "s",
            vec![
                (0.0, 1.0),
                (1.0, 0.0),
                (2.0, -5.0),
                (3.0, 100.0),
                (4.0, 1000.0),
            ],
        ))
        .to_svg();
    let doc = parse(&svg);
    let parts = subpaths(line_path(&doc, 0).unwrap());
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].len(), 2);
    assert_eq!(texts_in(&doc, "y-ticks"), ["1", "10", "100", "1k"]);
}

#[test]
fn text_is_escaped_and_round_trips() {
    let nasty = r#"<&>"' cwnd & "rtt" <b>"#;
    let svg = Chart::new(nasty)
        .x_label(nasty)
        .y_label(nasty)
        .series(Series::line(nasty, vec![(0.0, 0.0), (1.0, 1.0)]).color(r#"red" onload="x"#))
        .hline(0.5, nasty)
        .vline(0.5, nasty)
        .band_x(0.1, 0.2, nasty)
        .to_svg();
    let doc = parse(&svg);
    let title = doc
        .root_element()
        .children()
        .find(|n| n.has_tag_name("title"))
        .and_then(|n| n.text());
    assert_eq!(title, Some(nasty));
    assert_eq!(by_class(&doc, "title")[0].text(), Some(nasty));
    assert_eq!(by_class(&doc, "x-label")[0].text(), Some(nasty));
    assert_eq!(by_class(&doc, "y-label")[0].text(), Some(nasty));
    assert!(texts_in(&doc, "legend").contains(&nasty.to_string()));
    let occurrences = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && n.text() == Some(nasty))
        .count();
    assert_eq!(
        occurrences, 7,
        "title, 2 axis labels, legend, 2 ref lines, region"
    );
    // The hostile colour stays inside its attribute.
    assert!(doc.descendants().all(|n| n.attribute("onload").is_none()));

    let bars = BarChart::new(nasty)
        .group(nasty, vec![(nasty.to_string(), 1.0)])
        .group("b", vec![(nasty.to_string(), 2.0)])
        .to_svg();
    let doc = parse(&bars);
    assert!(texts_in(&doc, "x-ticks").contains(&nasty.to_string()));
    assert!(texts_in(&doc, "legend").contains(&nasty.to_string()));

    // Control characters that XML forbids are replaced, not emitted.
    parse(&Chart::new("bell\u{7}").to_svg());
}

#[test]
fn nice_ticks_for_typical_ranges() {
    assert_eq!(linear_ticks(0.0, 1.0, 6), [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
    assert_eq!(linear_ticks(0.0, 1.0, 11).len(), 11);
    let t = linear_ticks(0.0, 1.0, 3);
    assert_eq!(t, [0.0, 0.5, 1.0]);
    assert_eq!(format_ticks(&t, 0.5), ["0", "0.5", "1"]);

    let (lo, hi, step) = nice_bounds(0.0, 2.4e6, 6);
    assert_eq!((lo, hi, step), (0.0, 2.5e6, 5e5));
    let t = linear_ticks(lo, hi, 6);
    assert_eq!(
        format_ticks(&t, step),
        ["0", "500k", "1M", "1.5M", "2M", "2.5M"]
    );

    assert_eq!(nice_bounds(3.0, 97.0, 6), (0.0, 100.0, 20.0));
    assert_eq!(linear_ticks(3.0, 97.0, 6), [20.0, 40.0, 60.0, 80.0]);
    assert_eq!(
        linear_ticks(3.0, 97.0, 10),
        [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0]
    );

    let t = log_ticks(1e-3, 1e3, 10);
    assert_eq!(t, [1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0]);
    let labels: Vec<String> = t.iter().map(|&v| format_value(v)).collect();
    assert_eq!(labels, ["1e-3", "0.01", "0.1", "1", "10", "100", "1k"]);
    // Too many decades: every other one, keeping 1.
    assert_eq!(
        log_ticks(1e-6, 1e6, 7),
        [1e-6, 1e-4, 1e-2, 1.0, 1e2, 1e4, 1e6]
    );
    // Less than a decade: 1-2-5 refinement.
    assert_eq!(log_ticks(3.0, 97.0, 8), [5.0, 10.0, 20.0, 50.0]);

    // Negative and small ranges.
    assert_eq!(linear_ticks(-1.0, 1.0, 5), [-1.0, -0.5, 0.0, 0.5, 1.0]);
    let t = linear_ticks(0.0, 0.003, 4);
    assert_eq!(format_ticks(&t, 1e-3), ["0", "0.001", "0.002", "0.003"]);
    assert_eq!(
        format_ticks(&[0.0, 2e-4, 4e-4], 2e-4),
        ["0", "2e-4", "4e-4"]
    );
}

#[test]
fn rendered_axes_use_nice_ticks() {
    let svg = Chart::new("big")
        .size(800, 400)
        .series(Series::line("s", vec![(0.0, 0.0), (97.0, 2.4e6)]))
        .to_svg();
    let doc = parse(&svg);
    let y = texts_in(&doc, "y-ticks");
    assert_eq!(y.first().map(String::as_str), Some("0"));
    assert!(y.last().is_some_and(|l| l == "2.5M"), "{y:?}");
    assert!(y.iter().all(|l| l.len() <= 4), "{y:?}");
    let x = texts_in(&doc, "x-ticks");
    assert_eq!(x.first().map(String::as_str), Some("0"));
    assert!(x.contains(&"90".to_string()), "{x:?}");

    let svg = Chart::new("log x")
        .log_x(true)
        .series(Series::line("s", vec![(1e-3, 1.0), (1e3, 2.0)]))
        .to_svg();
    let doc = parse(&svg);
    assert_eq!(
        texts_in(&doc, "x-ticks"),
        ["1e-3", "0.01", "0.1", "1", "10", "100", "1k"]
    );
}

#[test]
fn rendering_is_deterministic() {
    let build = || {
        let mut c = Chart::new("det").x_label("t");
        for k in 0..5 {
            let pts: Vec<(f64, f64)> = (0..20_000)
                .map(|i| (f64::from(i) * 0.01, f64::from((i * (k + 3)) % 97)))
                .collect();
            c.push_series(Series::line(format!("s{k}"), pts));
        }
        c.band_x(10.0, 20.0, "r").hline(50.0, "h")
    };
    let a = build().to_svg();
    let b = build().to_svg();
    assert_eq!(a, b);
    let fa = Figure::new("f", 2).panel(build()).panel(build()).to_svg();
    let fb = Figure::new("f", 2).panel(build()).panel(build()).to_svg();
    assert_eq!(fa, fb);
}

#[test]
fn empty_inputs_render_a_no_data_note() {
    let cases = [
        Chart::new("").to_svg(),
        Chart::new("empty").to_svg(),
        Chart::new("empty series")
            .series(Series::line("a", vec![]))
            .to_svg(),
        Chart::new("empty log").log_x(true).log_y(true).to_svg(),
        Chart::new("tiny").size(0, 0).to_svg(),
        BarChart::new("no bars").to_svg(),
        BarChart::new("empty group").group("g", vec![]).to_svg(),
        Figure::new("no panels", 3).to_svg(),
    ];
    for svg in &cases {
        let doc = parse(svg);
        assert_eq!(by_class(&doc, "no-data").len(), 1, "{svg}");
        assert!(!svg.contains("NaN"));
    }
    // A figure with an empty panel still renders the panel's note.
    let svg = Figure::new("f", 0).panel(Chart::new("e")).to_svg();
    assert_eq!(by_class(&parse(&svg), "no-data").len(), 1);
}

#[test]
fn degenerate_ranges_render() {
    let cases = [
        Chart::new("same x").series(Series::line("s", vec![(5.0, 1.0), (5.0, 2.0)])),
        Chart::new("same y").series(Series::line("s", vec![(1.0, 3.0), (2.0, 3.0)])),
        Chart::new("single").series(Series::points("s", vec![(0.0, 0.0)])),
        Chart::new("single log")
            .log_x(true)
            .log_y(true)
            .series(Series::points("s", vec![(10.0, 10.0)])),
        Chart::new("huge").series(Series::line("s", vec![(0.0, -1e300), (1.0, 1e300)])),
        Chart::new("tiny span").series(Series::line("s", vec![(1e9, 1.0), (1e9 + 1e-3, 2.0)])),
        Chart::new("reversed range")
            .x_range(10.0, 0.0)
            .y_range(5.0, 5.0)
            .series(Series::line("s", vec![(1.0, 1.0), (2.0, 2.0)])),
        Chart::new("nan range")
            .x_range(f64::NAN, 1.0)
            .series(Series::line("s", vec![(1.0, 1.0), (2.0, 2.0)])),
        Chart::new("bad log range")
            .log_y(true)
            .y_range(-1.0, 0.0)
            .series(Series::line("s", vec![(1.0, 1.0), (2.0, 2.0)])),
    ];
    for c in &cases {
        let svg = c.to_svg();
        let doc = parse(&svg);
        assert!(by_class(&doc, "no-data").is_empty(), "{svg}");
        assert!(texts_in(&doc, "x-ticks").len() >= 2, "{svg}");
        assert!(texts_in(&doc, "y-ticks").len() >= 2, "{svg}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }
}

#[test]
fn data_outside_a_fixed_range_is_clipped() {
    let pts: Vec<(f64, f64)> = (0..10_000)
        .map(|i| (f64::from(i), 1e12 * f64::from(i % 2)))
        .collect();
    let svg = Chart::new("zoom")
        .size(400, 300)
        .x_range(100.0, 200.0)
        .y_range(0.0, 10.0)
        .series(Series::line("s", pts))
        .to_svg();
    let doc = parse(&svg);
    let pts: Vec<(f64, f64)> = subpaths(line_path(&doc, 0).unwrap())
        .into_iter()
        .flatten()
        .collect();
    assert!(!pts.is_empty());
    assert!(pts
        .iter()
        .all(|&(x, y)| (0.0..=400.0).contains(&x) && (0.0..=300.0).contains(&y)));
    assert!(pts.len() < 2000, "{}", pts.len());
}

#[test]
fn legend_stays_out_of_the_plot() {
    let svg = Chart::new("legend")
        .series(Series::line("a", vec![(0.0, 0.0), (1.0, 1.0)]))
        .series(Series::line("b", vec![(0.0, 1.0), (1.0, 0.0)]))
        .to_svg();
    let doc = parse(&svg);
    let axes = by_class(&doc, "axes")[0].attribute("d").unwrap();
    // "M{left},{top}V{bottom}H{right}..."
    let right: f64 = axes
        .split('H')
        .nth(1)
        .unwrap()
        .split('M')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let legend_x: Vec<f64> = by_class(&doc, "legend")[0]
        .descendants()
        .filter_map(|n| n.attribute("x").or(n.attribute("cx")))
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(!legend_x.is_empty());
    assert!(
        legend_x.iter().all(|&x| x > right),
        "{legend_x:?} vs {right}"
    );

    // Many long names go below the plot instead.
    let mut c = Chart::new("many");
    for i in 0..6 {
        c.push_series(Series::line(
            format!("a rather long series name number {i}"),
            vec![(0.0, 0.0), (1.0, f64::from(i))],
        ));
    }
    let doc_svg = c.to_svg();
    let doc = parse(&doc_svg);
    let axes = by_class(&doc, "axes")[0].attribute("d").unwrap();
    let bottom: f64 = axes
        .split('V')
        .nth(1)
        .unwrap()
        .split('H')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let legend_y: Vec<f64> = by_class(&doc, "legend")[0]
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.attribute("y").unwrap().parse().unwrap())
        .collect();
    assert_eq!(legend_y.len(), 6);
    assert!(
        legend_y.iter().all(|&y| y > bottom + 15.0 && y < 400.0),
        "{legend_y:?}"
    );
}

#[test]
fn bar_charts() {
    let single = BarChart::new("one").group("g", vec![("a".into(), 1.0), ("b".into(), 2.0)]);
    let doc_svg = single.to_svg();
    let doc = parse(&doc_svg);
    assert!(
        by_class(&doc, "legend").is_empty(),
        "no legend for one group"
    );
    assert_eq!(
        doc.descendants().filter(|n| n.has_tag_name("rect")).count(),
        1 + 2
    );

    let grouped = BarChart::new("grouped")
        .group("g1", vec![("a".into(), 1.0), ("b".into(), 2.0)])
        .group("g2", vec![("b".into(), 3.0), ("c".into(), -1.0)])
        .group("g3", vec![("a".into(), f64::NAN)]);
    let svg = grouped.to_svg();
    let doc = parse(&svg);
    assert_eq!(texts_in(&doc, "legend"), ["g1", "g2", "g3"]);
    assert_eq!(texts_in(&doc, "x-ticks"), ["a", "b", "c"]);
    // Legend swatches (3) + background + 4 finite bars.
    assert_eq!(
        doc.descendants().filter(|n| n.has_tag_name("rect")).count(),
        3 + 1 + 4
    );
    let y = texts_in(&doc, "y-ticks");
    assert!(
        y.contains(&"0".to_string()) && y.first().is_some_and(|t| t.starts_with('-')),
        "{y:?}"
    );

    // Many categories: labels are thinned out and rotated, never panics.
    let many: Vec<(String, f64)> = (0..300)
        .map(|i| (format!("bin {i}"), f64::from(i % 17)))
        .collect();
    let svg = BarChart::new("many").group("g", many).to_svg();
    let doc = parse(&svg);
    let labels = texts_in(&doc, "x-ticks");
    assert!(labels.len() < 100 && labels.len() > 5, "{}", labels.len());
}

#[test]
fn cdf_points_are_correct() {
    assert!(cdf_points(&[]).is_empty());
    assert!(cdf_points(&[f64::NAN, f64::INFINITY]).is_empty());
    assert_eq!(cdf_points(&[7.0]), [(7.0, 0.0), (7.0, 1.0)]);
    assert_eq!(
        cdf_points(&[3.0, 1.0, 2.0, f64::NAN, 2.0]),
        [(1.0, 0.0), (1.0, 0.25), (2.0, 0.75), (3.0, 1.0)]
    );
    let samples: Vec<f64> = (0..1000).map(|i| f64::from((i * 37) % 100)).collect();
    let cdf = cdf_points(&samples);
    assert_eq!(cdf.len(), 101);
    assert!(cdf.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
    assert_eq!(cdf.last(), Some(&(99.0, 1.0)));
    assert_eq!(cdf[50], (49.0, 0.5));
}

#[test]
fn histogram_feeds_bar_chart() {
    let samples: Vec<f64> = (0..500).map(|i| f64::from(i % 50) * 0.37).collect();
    let h = histogram(&samples, 10);
    assert_eq!(h.iter().map(|b| b.1).sum::<f64>(), 500.0);
    let svg = BarChart::new("h").group("g", h).to_svg();
    parse(&svg);
}

#[test]
fn write_svg_writes_the_file() {
    let dir = std::env::temp_dir().join(format!("hopwise-plot-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.svg");
    let chart = Chart::new("w").series(Series::line("s", vec![(0.0, 1.0), (1.0, 2.0)]));
    chart.write_svg(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), chart.to_svg());
    assert!(!dir.join("c.svg.tmp").exists());
    Figure::new("f", 1)
        .panel(chart)
        .write_svg(dir.join("f.svg"))
        .unwrap();
    BarChart::new("b").write_svg(dir.join("b.svg")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn large_series_render_quickly_and_compactly() {
    let mut c = Chart::new("big").size(1200, 500);
    for k in 0..5u32 {
        let pts: Vec<(f64, f64)> = (0..200_000u32)
            .map(|i| (f64::from(i) * 1e-3, f64::from((i * (k + 11)) % 1009)))
            .collect();
        c.push_series(Series::line(format!("s{k}"), pts));
    }
    let svg = c.to_svg();
    // At most ~4 points per pixel column per series, ~10 bytes per point.
    assert!(svg.len() < 5 * 4 * 1200 * 12, "{} bytes", svg.len());
    parse(&svg);
}

/// The x/y charts stacked in a figure's column share their plot areas' left
/// and right edges, whatever their tick labels and legends; a lone chart in
/// its column keeps its own.
#[test]
fn stacked_panels_share_plot_edges() {
    let clip_rects = |svg: &str| -> Vec<(f64, f64)> {
        let doc = parse(svg);
        doc.descendants()
            .filter(|n| n.has_tag_name("clipPath"))
            .filter_map(|c| c.children().find(|n| n.has_tag_name("rect")))
            .map(|r| {
                let x: f64 = r.attribute("x").unwrap().parse().unwrap();
                let w: f64 = r.attribute("width").unwrap().parse().unwrap();
                (x, x + w)
            })
            .collect()
    };
    let pts = |scale: f64| {
        (0..50)
            .map(|i| (i as f64, scale * i as f64))
            .collect::<Vec<_>>()
    };
    // Narrow y labels and one short legend entry, against wide y labels and
    // two long legend entries.
    let a = Chart::new("a").series(Series::line("x", pts(1.0)));
    let b = Chart::new("b")
        .series(Series::line("a rather long series name", pts(1e6)))
        .series(Series::line("another long series name", pts(2e6)));
    let alone = |c: &Chart| clip_rects(&Figure::new("", 1).panel(c.clone()).to_svg())[0];
    let (ra, rb) = (alone(&a), alone(&b));
    assert!(
        (ra.0 - rb.0).abs() > 5.0 || (ra.1 - rb.1).abs() > 5.0,
        "the test needs charts that differ alone: {ra:?} {rb:?}"
    );
    let stacked = clip_rects(&Figure::new("t", 1).panel(a).panel(b).to_svg());
    assert_eq!(stacked.len(), 2);
    assert_eq!(stacked[0], stacked[1], "stacked plot areas differ");
    assert_eq!(stacked[0].0, ra.0.max(rb.0));
    assert_eq!(stacked[0].1, ra.1.min(rb.1));
}

#[test]
fn an_incomplete_last_row_is_centred() {
    let chart = || Chart::new("c").series(Series::line("s", vec![(0.0, 1.0), (1.0, 2.0)]));
    let xs = |fig: Figure| -> Vec<f64> {
        let svg = fig.to_svg();
        let doc = parse(&svg);
        let width: f64 = doc
            .root_element()
            .attribute("width")
            .unwrap()
            .parse()
            .unwrap();
        by_class(&doc, "panel")
            .iter()
            .map(|n| {
                let t = n.attribute("transform").unwrap();
                let x: f64 = t["translate(".len()..t.find(',').unwrap()].parse().unwrap();
                x / width
            })
            .collect()
    };
    // Three equal panels in two columns: the third sits in the middle.
    let x = xs(Figure::new("f", 2)
        .panel(chart())
        .panel(chart())
        .panel(chart()));
    assert_eq!(x.len(), 3);
    assert!(x[0].abs() < 1e-9 && (x[1] - 0.5).abs() < 1e-3, "{x:?}");
    assert!((x[2] - 0.25).abs() < 1e-3, "{x:?}");
    // Full rows are left as they are.
    let x = xs(Figure::new("f", 2)
        .panel(chart())
        .panel(chart())
        .panel(chart())
        .panel(chart()));
    assert!(x[2].abs() < 1e-9 && (x[3] - 0.5).abs() < 1e-3, "{x:?}");
    // So is a single row with fewer panels than columns.
    let x = xs(Figure::new("f", 3).panel(chart()));
    assert!(x[0].abs() < 1e-9, "{x:?}");
}

#[test]
fn bar_error_bars_are_drawn_and_widen_the_axis() {
    let chart = BarChart::new("e")
        .group_with_errors(
            "a",
            vec![
                ("x".into(), 1.0, (0.5, 3.0)),
                ("y".into(), 2.0, (f64::NAN, 2.5)),
            ],
        )
        .group_with_errors("b", vec![("x".into(), 1.5, (1.0, 2.0))]);
    let svg = chart.to_svg();
    let doc = parse(&svg);
    let paths = by_class(&doc, "error-bars");
    assert_eq!(paths.len(), 1, "{svg}");
    // One whisker (three moves: the line and its two caps) per finite bar.
    let d = paths[0].attribute("d").unwrap();
    assert_eq!(d.matches('M').count(), 2 * 3, "{d}");
    // The axis reaches the top of the highest whisker (3), not only the
    // highest bar (2).
    let ticks: Vec<f64> = by_class(&doc, "y-ticks")[0]
        .children()
        .filter_map(|n| n.text())
        .filter_map(|t| t.parse().ok())
        .collect();
    assert!(
        ticks.iter().cloned().fold(0.0, f64::max) >= 3.0,
        "{ticks:?}"
    );
    // Without errors there are no whiskers.
    let plain = BarChart::new("p")
        .group("a", vec![("x".into(), 1.0)])
        .to_svg();
    assert!(by_class(&parse(&plain), "error-bars").is_empty());
}
