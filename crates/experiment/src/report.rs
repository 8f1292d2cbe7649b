//! `report.html`: one page per reproduction with the claims table and every
//! figure, for people who would rather look than read the terminal.
//!
//! The page links the SVGs, CSVs and `summary.json` that sit beside it in
//! the output directory (relative links, so the directory can be moved or
//! served as it is) and needs no scripts or network access.

#[cfg(test)]
use crate::claim::Verdict;
use crate::claim::{Claim, Tally};
use hopwise_plot::escape_markup as esc;
use std::fmt::Write as _;
use std::path::Path;

/// What the page says about the run besides its claims and files.
#[derive(Clone, Debug)]
pub struct ReportMeta<'a> {
    /// Page title, e.g. "hopwise reproduce pendulum".
    pub title: &'a str,
    /// One line under the title (which paper and what it shows).
    pub about: &'a str,
    /// Further lines of run facts (command, variant, wall time), shown as a list.
    pub facts: &'a [String],
    /// Preformatted text shown after the facts (e.g. the terminal summary).
    pub text: Option<&'a str>,
    /// Figure → CSV pairs that the naming rule of [`data_files`] misses.
    pub data: &'a [(&'a str, &'a str)],
}

/// For each SVG in `files` (in order), the CSVs that hold its data: a CSV
/// belongs to the figure with the longest name that its own name extends
/// (`fig1.svg` gets `fig1.csv` and `fig1_queues.csv`, but not `fig10.csv`,
/// and `fig5_ramp_series.csv` goes to `fig5_ramp.svg`, not `fig5.svg`),
/// plus the pairs in `extra`.
pub fn data_files<'a>(files: &'a [String], extra: &[(&str, &str)]) -> Vec<Vec<&'a String>> {
    let svgs: Vec<&String> = files.iter().filter(|f| f.ends_with(".svg")).collect();
    let mut out: Vec<Vec<&String>> = vec![Vec::new(); svgs.len()];
    for csv in files.iter().filter(|f| f.ends_with(".csv")) {
        let stem = csv.trim_end_matches(".csv");
        let owner = svgs
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                let fig = s.trim_end_matches(".svg");
                stem == fig || stem.strip_prefix(fig).is_some_and(|r| r.starts_with('_'))
            })
            .max_by_key(|(_, s)| s.len())
            .map(|(i, _)| i);
        if let Some(i) = owner {
            out[i].push(csv);
        }
        for (k, s) in svgs.iter().enumerate() {
            if extra.iter().any(|(f, c)| f == s && c == csv) && !out[k].contains(&csv) {
                out[k].push(csv);
            }
        }
    }
    out
}

/// A file name as a relative URL: every byte outside the unreserved set
/// (RFC 3986 §2.3) is percent-encoded, so names with spaces or `#` work.
fn href(name: &str) -> String {
    let mut o = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}\
h1{font-size:1.5em;margin-bottom:.2em}.about{color:#555;margin-top:0}\
table{border-collapse:collapse;width:100%;font-size:.9em}\
th,td{border-bottom:1px solid #ddd;padding:.35em .5em;text-align:left;vertical-align:top}\
th{background:#f4f4f4}.v{font-weight:bold;white-space:nowrap}\
.holds{color:#1a7f37}.differs{color:#b42318}.inconclusive{color:#b54708}.info{color:#666}\
tr.inconclusive td{background:#fffaeb}.judged{color:#555;font-size:.9em}\
.counts span{margin-right:1.5em}\
figure{margin:2em 0}figure img{max-width:100%;border:1px solid #eee}\
figcaption{font-size:.85em;color:#555}ul.files{columns:3;font-size:.9em}";

/// The page for `claims` and the `files` (names relative to the output
/// directory, in the order the reproduction wrote them).
pub fn render(meta: &ReportMeta, claims: &[Claim], files: &[String]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        esc(meta.title),
        esc(meta.title),
    );
    if !meta.about.is_empty() {
        let _ = writeln!(h, "<p class=\"about\">{}</p>", esc(meta.about));
    }
    if !meta.facts.is_empty() {
        h.push_str("<ul>\n");
        for f in meta.facts {
            let _ = writeln!(h, "<li>{}</li>", esc(f));
        }
        h.push_str("</ul>\n");
    }
    if let Some(t) = meta.text {
        let _ = writeln!(h, "<pre>{}</pre>", esc(t.trim_end()));
    }

    if !claims.is_empty() {
        let t = Tally::of(claims);
        let _ = write!(
            h,
            "<h2>Claims</h2>\n<p class=\"counts\"><span class=\"holds\">{} hold</span>\
             <span class=\"differs\">{} differ</span>\
             <span class=\"inconclusive\">{} inconclusive</span>\
             <span class=\"info\">{} for information</span></p>\n\
             <p class=\"about\">A value judged over seeds or runs has its 90 % interval: the \
             claim <span class=\"holds\">holds</span> when the whole interval meets the \
             criterion, <span class=\"differs\">differs</span> when the whole interval misses \
             it, and is <span class=\"inconclusive\">inconclusive</span> when the interval \
             straddles the threshold.</p>\n",
            t.holds, t.differs, t.inconclusive, t.info
        );
        h.push_str(
            "<table>\n<tr><th>figure</th><th>verdict</th><th>paper's claim</th>\
             <th>criterion</th><th>ours</th></tr>\n",
        );
        for c in claims {
            let class = c.verdict.word();
            let (word, note) = match &c.calibrated {
                Some(what) => (
                    format!("{class} (calibrated)"),
                    format!(
                        "<br><em>calibrated: {}, so the verdict follows from the fit</em>",
                        esc(what)
                    ),
                ),
                None => (class.to_string(), String::new()),
            };
            let judged = c.judged();
            let judged = if judged.is_empty() {
                String::new()
            } else {
                format!("<br><span class=\"judged\">judged: {}</span>", esc(&judged))
            };
            let _ = writeln!(
                h,
                "<tr class=\"{class}\"><td>{}</td><td class=\"v {class}\">{word}</td><td>{}</td>\
                 <td>{}</td><td>{}{judged}{note}</td></tr>",
                esc(&c.figure),
                esc(&c.claim),
                esc(c.criterion.as_deref().unwrap_or("")),
                esc(&c.measured)
            );
        }
        h.push_str("</table>\n");
    }

    let svgs: Vec<&String> = files.iter().filter(|f| f.ends_with(".svg")).collect();
    if !svgs.is_empty() {
        h.push_str("<h2>Figures</h2>\n");
    }
    let data = data_files(files, meta.data);
    for (f, csvs) in svgs.iter().zip(&data) {
        let data = if csvs.is_empty() {
            String::new()
        } else {
            let links: Vec<String> = csvs
                .iter()
                .map(|c| format!("<a href=\"{}\">{}</a>", href(c), esc(c)))
                .collect();
            format!(" · data: {}", links.join(", "))
        };
        let _ = writeln!(
            h,
            "<figure id=\"{}\"><a href=\"{}\"><img src=\"{}\" alt=\"{}\" loading=\"lazy\"></a>\
             <figcaption><a href=\"{}\">{}</a>{data}</figcaption></figure>",
            esc(f),
            href(f),
            href(f),
            esc(f),
            href(f),
            esc(f)
        );
    }

    let others: Vec<&String> = files.iter().filter(|f| !f.ends_with(".svg")).collect();
    if !others.is_empty() {
        h.push_str("<h2>Data</h2>\n<ul class=\"files\">\n");
        for f in others {
            let _ = writeln!(h, "<li><a href=\"{}\">{}</a></li>", href(f), esc(f));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("</body>\n</html>\n");
    h
}

/// Writes [`render`]'s page to `dir/report.html` (through a temporary file
/// and a rename, so a reader never sees half a page). Files in `files` that
/// do not exist in `dir` are left out.
pub fn write(
    dir: &Path,
    meta: &ReportMeta,
    claims: &[Claim],
    files: &[String],
) -> anyhow::Result<()> {
    let mut present: Vec<String> = Vec::new();
    for f in files {
        if f != "report.html" && dir.join(f).is_file() && !present.contains(f) {
            present.push(f.clone());
        }
    }
    let page = render(meta, claims, &present);
    let tmp = dir.join(".report.html.tmp");
    std::fs::write(&tmp, page).map_err(|e| anyhow::anyhow!("writing {}: {e}", tmp.display()))?;
    let to = dir.join("report.html");
    std::fs::rename(&tmp, &to).map_err(|e| anyhow::anyhow!("writing {}: {e}", to.display()))?;
    Ok(())
}

/// One reproduction's line on the overview page of `hopwise reproduce all`.
#[derive(Clone, Debug)]
pub struct IndexRow<'a> {
    /// The reproduction's name, also its subdirectory.
    pub name: &'a str,
    pub about: &'a str,
    pub tally: Tally,
    pub wall_s: f64,
    /// Why the reproduction failed, if it did (its counts are then 0).
    pub error: Option<String>,
}

/// The overview page: one row per reproduction, linked to its `report.html`.
pub fn index(quick: bool, rows: &[IndexRow]) -> String {
    let mut h = String::new();
    let title = "hopwise reproduce all";
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n\
         <p class=\"about\">{} variant, hopwise {}</p>\n<table>\n\
         <tr><th>reproduction</th><th>seed paper</th><th>holds</th><th>differs</th>\
         <th>inconclusive</th><th>information</th><th>wall</th></tr>\n",
        if quick { "quick" } else { "full" },
        env!("CARGO_PKG_VERSION")
    );
    for r in rows {
        if let Some(e) = &r.error {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td class=\"v differs\" colspan=\"5\">failed: {}</td></tr>",
                esc(r.name),
                esc(r.about),
                esc(e)
            );
            continue;
        }
        let _ = writeln!(
            h,
            "<tr><td><a href=\"{}/report.html\">{}</a></td><td>{}</td>\
             <td class=\"v holds\">{}</td><td class=\"v{}\">{}</td>\
             <td class=\"v{}\">{}</td><td class=\"info\">{}</td><td>{:.1} s</td></tr>",
            href(r.name),
            esc(r.name),
            esc(r.about),
            r.tally.holds,
            if r.tally.differs > 0 { " differs" } else { "" },
            r.tally.differs,
            if r.tally.inconclusive > 0 {
                " inconclusive"
            } else {
                ""
            },
            r.tally.inconclusive,
            r.tally.info,
            r.wall_s
        );
    }
    h.push_str("</table>\n</body>\n</html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::Estimate;

    fn claim(verdict: Verdict, measured: &str) -> Claim {
        let c = Claim::new("Fig. 1", "r < 3 & \"more\"").measured(measured);
        match verdict {
            Verdict::Holds => c.at_most("r", 2.0, 3.0),
            Verdict::Differs => c.at_most("r", 4.0, 3.0),
            Verdict::Inconclusive => c.at_most("r", Estimate::mean_t90(&[2.0, 3.0, 4.0]), 3.0),
            Verdict::Info => c,
        }
    }

    #[test]
    fn page_escapes_text_and_links_figures_with_their_data() {
        let meta = ReportMeta {
            title: "hopwise reproduce x",
            about: "seed <000>",
            facts: &["quick".to_string()],
            text: None,
            data: &[],
        };
        let files = vec![
            "fig 1.svg".to_string(),
            "fig 1.csv".to_string(),
            "fig2.svg".to_string(),
            "summary.json".to_string(),
        ];
        let page = render(
            &meta,
            &[
                claim(Verdict::Holds, "<b>2.1</b>"),
                claim(Verdict::Differs, "4"),
                claim(Verdict::Holds, "5").calibrated("a <buffer>"),
                claim(Verdict::Inconclusive, "6"),
            ],
            &files,
        );
        assert!(page.contains("seed &lt;000&gt;"), "{page}");
        assert!(page.contains("r &lt; 3 &amp; &quot;more&quot;"), "{page}");
        assert!(page.contains("&lt;b&gt;2.1&lt;/b&gt;"), "{page}");
        assert!(!page.contains("<b>"), "{page}");
        assert!(
            page.contains("2 hold") && page.contains("1 differ"),
            "{page}"
        );
        assert!(page.contains(">holds (calibrated)</td>"), "{page}");
        // An open question has its own colour and word, and its interval.
        assert!(page.contains("1 inconclusive"), "{page}");
        assert!(
            page.contains("<td class=\"v inconclusive\">inconclusive</td>"),
            "{page}"
        );
        assert!(page.contains(".inconclusive{color:"), "{page}");
        assert!(
            page.contains("judged: r = 3 (90 %: 1.31–4.69, t, n = 3)"),
            "{page}"
        );
        assert!(page.contains("<td>r ≤ 3</td>"), "{page}");
        assert!(page.contains("calibrated: a &lt;buffer&gt;, so"), "{page}");
        // Both figures, in order; the first with its CSV, the second without.
        let a = page.find("<img src=\"fig%201.svg\"").expect("fig 1");
        let b = page.find("<img src=\"fig2.svg\"").expect("fig2");
        assert!(a < b);
        assert!(
            page.contains("data: <a href=\"fig%201.csv\">fig 1.csv</a>"),
            "{page}"
        );
        assert_eq!(page.matches("data: <a").count(), 1, "{page}");
        assert!(page.contains("<li><a href=\"summary.json\">summary.json</a></li>"));
    }

    #[test]
    fn csvs_go_to_the_figure_whose_name_they_extend_most() {
        let files: Vec<String> = [
            "fig1.svg",
            "fig10.svg",
            "fig5.svg",
            "fig5_ramp.svg",
            "queue.svg",
            "fig1.csv",
            "fig1_queues.csv",
            "fig10.csv",
            "fig5_runs.csv",
            "fig5_ramp_series.csv",
            "fig5ramp.csv",
            "queues.csv",
            "summary.json",
        ]
        .map(String::from)
        .to_vec();
        let d = data_files(&files, &[("queue.svg", "queues.csv")]);
        let names = |i: usize| d[i].iter().map(|s| s.as_str()).collect::<Vec<_>>();
        assert_eq!(names(0), ["fig1.csv", "fig1_queues.csv"]);
        assert_eq!(names(1), ["fig10.csv"]);
        assert_eq!(names(2), ["fig5_runs.csv"]);
        assert_eq!(names(3), ["fig5_ramp_series.csv"]);
        assert_eq!(names(4), ["queues.csv"]);
    }

    #[test]
    fn index_links_each_reproduction_and_marks_differences() {
        let row = |name, differs| IndexRow {
            name,
            about: "seed <1>",
            tally: Tally {
                holds: 3,
                differs,
                inconclusive: 1,
                info: 1,
            },
            wall_s: 2.25,
            error: None,
        };
        let failed = IndexRow {
            error: Some("boom <x>".into()),
            ..row("overlay-ack", 0)
        };
        let page = index(true, &[row("pendulum", 0), row("ledbat-flow", 2), failed]);
        assert!(page.contains("failed: boom &lt;x&gt;"), "{page}");
        assert!(!page.contains("overlay-ack/report.html"), "{page}");
        assert!(page.contains("<a href=\"pendulum/report.html\">pendulum</a>"));
        assert!(page.contains("<a href=\"ledbat-flow/report.html\">ledbat-flow</a>"));
        assert!(page.contains("seed &lt;1&gt;"));
        assert!(page.contains("<td class=\"v differs\">2</td>"), "{page}");
        assert!(page.contains("<td class=\"v\">0</td>"), "{page}");
        assert!(
            page.contains("<td class=\"v inconclusive\">1</td>"),
            "{page}"
        );
        assert!(page.contains("quick variant"));
    }

    #[test]
    fn write_leaves_out_files_that_are_not_there() {
        let dir = std::env::temp_dir().join(format!("hopwise-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.svg"), "<svg/>").unwrap();
        let meta = ReportMeta {
            title: "t",
            about: "",
            facts: &[],
            text: Some("flow  goodput\n<a>  1.0"),
            data: &[],
        };
        write(
            &dir,
            &meta,
            &[],
            &["a.svg".into(), "gone.svg".into(), "a.svg".into()],
        )
        .unwrap();
        let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert_eq!(page.matches("<img src=\"a.svg\"").count(), 1, "{page}");
        assert!(!page.contains("gone.svg"), "{page}");
        // No claims, no claims section; no about line; the text is kept as
        // it is, escaped.
        assert!(!page.contains("class=\"about\""), "{page}");
        assert!(!page.contains("<h2>Claims</h2>"), "{page}");
        assert!(
            page.contains("<pre>flow  goodput\n&lt;a&gt;  1.0</pre>"),
            "{page}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
