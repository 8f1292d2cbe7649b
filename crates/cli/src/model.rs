//! `hopwise model <name>`: the seed papers' analytical models as calculators.
//! Each model is one subcommand of [`ModelCmd`]; quantities are written with
//! units and parsed by `hopwise_proto::units`.

use anyhow::{anyhow, bail, Result};
use clap::{ArgGroup, Args, Subcommand};
use hopwise_models::pendulum::{self, Param, ParamError, Params, Sizing, SizingError, Windows};
use hopwise_proto::units::{parse_bytes, parse_duration, parse_rate};
use std::fmt::Write as _;

#[derive(Subcommand, Debug)]
pub enum ModelCmd {
    /// Seed 004's data pendulum: the download/upload throughput ratio r = Xd/Xu
    /// of two-way TCP over a link with drop-tail buffers (Eq. 6-11), or the
    /// uplink buffer that gives a target r.
    Pendulum(PendulumArgs),
}

/// `hopwise model pendulum`.
#[derive(Args, Debug, Clone)]
#[command(
    group(ArgGroup::new("up_side").required(true).args(["up_buffer", "target_r"])),
    after_help = "Examples: hopwise model pendulum --down-rate 2.4Mbit --up-rate 196kbit \
--rtt 200ms --down-buffer 30000B --up-buffer 15000B\n          hopwise model pendulum \
--down-rate 2.4Mbit --up-rate 196kbit --rtt 200ms --down-buffer 60kB --target-r k"
)]
pub struct PendulumArgs {
    /// Downlink capacity C_d, e.g. `2.4Mbit`.
    #[arg(long, allow_negative_numbers = true, value_name = "RATE")]
    pub down_rate: String,
    /// Uplink capacity C_u, e.g. `196kbit`.
    #[arg(long, allow_negative_numbers = true, value_name = "RATE")]
    pub up_rate: String,
    /// Round-trip propagation delay without queueing (the paper's 2·Tp), e.g. `200ms`; at most 120 s.
    #[arg(long, allow_negative_numbers = true, value_name = "DURATION")]
    pub rtt: String,
    /// Downlink (drop-tail) buffer B_d in bytes, e.g. `30000B` or `30kB`.
    #[arg(long, allow_negative_numbers = true, value_name = "BYTES")]
    pub down_buffer: String,
    /// Uplink buffer B_u in bytes (to compute r). Give this or --target-r.
    #[arg(long, allow_negative_numbers = true, value_name = "BYTES")]
    pub up_buffer: Option<String>,
    /// Size the uplink buffer for this ratio r = Xd/Xu (a number, or `k` for
    /// the capacity ratio C_d/C_u, at which both links are full), solving
    /// Eq. 6-10. Give this or --up-buffer.
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "R",
        conflicts_with = "up_buffer"
    )]
    pub target_r: Option<String>,
    /// The receivers delay their ACKs (one ACK per two full segments; the default).
    #[arg(long, conflicts_with = "no_delayed_ack")]
    pub delayed_ack: bool,
    /// One ACK per segment.
    #[arg(long)]
    pub no_delayed_ack: bool,
    /// Wire size of a pure ACK (52 B with timestamps; SACK blocks add 8 B each).
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "BYTES",
        default_value = "52B"
    )]
    pub ack_size: String,
    /// Wire size of a full data segment.
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "BYTES",
        default_value = "1500B"
    )]
    pub data_size: String,
    /// B_TCP, the smaller of the TCP send and receive buffers (hopwise's default 4 MiB).
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "BYTES",
        default_value = "4MiB"
    )]
    pub tcp_buffer: String,
}

pub fn run(cmd: ModelCmd) -> Result<()> {
    match cmd {
        ModelCmd::Pendulum(a) => {
            print!("{}", pendulum_report(&a)?);
            Ok(())
        }
    }
}

fn rate_arg(flag: &str, v: &str) -> Result<f64> {
    let r = parse_rate(v).map_err(|e| anyhow!("{flag}: {e}"))?;
    Ok(r.bytes_per_sec())
}

fn duration_arg(flag: &str, v: &str) -> Result<f64> {
    let d = parse_duration(v).map_err(|e| anyhow!("{flag}: {e}"))?;
    // Whole nanoseconds over 1e9, so that `120s` is exactly 120.0.
    Ok(d.as_nanos() as f64 / 1e9)
}

fn bytes_arg(flag: &str, v: &str) -> Result<f64> {
    Ok(parse_bytes(v).map_err(|e| anyhow!("{flag}: {e}"))?.0 as f64)
}

/// The flag that sets a model input.
fn flag(p: Param) -> &'static str {
    match p {
        Param::DownRate => "--down-rate",
        Param::UpRate => "--up-rate",
        Param::Rtt => "--rtt",
        Param::DownBuffer => "--down-buffer",
        Param::UpBuffer => "--up-buffer",
        Param::AckSize => "--ack-size",
        Param::DataSize => "--data-size",
        Param::TcpBuffer => "--tcp-buffer",
    }
}

/// What the user wrote for a model input.
fn raw(a: &PendulumArgs, p: Param) -> &str {
    match p {
        Param::DownRate => &a.down_rate,
        Param::UpRate => &a.up_rate,
        Param::Rtt => &a.rtt,
        Param::DownBuffer => &a.down_buffer,
        Param::UpBuffer => a.up_buffer.as_deref().unwrap_or("0B"),
        Param::AckSize => &a.ack_size,
        Param::DataSize => &a.data_size,
        Param::TcpBuffer => &a.tcp_buffer,
    }
}

/// A model error in the flags' terms: `--rtt: `1e30s` is too large: ...`.
fn param_error(a: &PendulumArgs, e: &ParamError) -> anyhow::Error {
    match e {
        ParamError::Bad { param, problem, .. } => {
            anyhow!("{}: `{}` {problem}", flag(*param), raw(a, *param))
        }
        _ => {
            let flags: Vec<String> = e
                .params()
                .into_iter()
                .map(|p| format!("{} {}", flag(p), raw(a, p)))
                .collect();
            anyhow!("{}: {e}", flags.join(" with "))
        }
    }
}

/// The parsed parameters (with `up_buffer` 0 when sizing) and the target
/// ratio, if any. Only the syntax is checked here; the ranges, and whether
/// the model is defined for the inputs, are checked by the model
/// ([`Params::solve_checked`], [`Params::size_up_buffer`]) in [`pendulum_report`].
pub fn pendulum_params(a: &PendulumArgs) -> Result<(Params, Option<f64>)> {
    if a.delayed_ack && a.no_delayed_ack {
        bail!("--delayed-ack and --no-delayed-ack contradict each other: give one");
    }
    let down_rate = rate_arg("--down-rate", &a.down_rate)?;
    let up_rate = rate_arg("--up-rate", &a.up_rate)?;
    let rtt = duration_arg("--rtt", &a.rtt)?;
    let down_buffer = bytes_arg("--down-buffer", &a.down_buffer)?;
    let up_buffer = match &a.up_buffer {
        Some(v) => bytes_arg("--up-buffer", v)?,
        None => 0.0,
    };
    let ack_size = bytes_arg("--ack-size", &a.ack_size)?;
    let data_size = bytes_arg("--data-size", &a.data_size)?;
    let tcp_buffer = bytes_arg("--tcp-buffer", &a.tcp_buffer)?;
    let p = Params {
        down_rate,
        up_rate,
        rtt,
        down_buffer,
        up_buffer,
        delayed_ack: !a.no_delayed_ack,
        ack_size,
        data_size,
        tcp_buffer,
    };
    let target = match a.target_r.as_deref() {
        None => None,
        Some("k") | Some("K") => Some(p.capacity_ratio()),
        Some(v) => match v.trim().parse::<f64>() {
            Ok(r) if r.is_finite() && r > 0.0 => Some(r),
            _ => bail!("--target-r: `{v}` is not a positive number (or `k` for C_d/C_u)"),
        },
    };
    match (&a.up_buffer, target) {
        (None, None) => bail!(
            "give --up-buffer (to compute r) or --target-r (to size the uplink buffer for a ratio r)"
        ),
        (Some(_), Some(_)) => bail!("give --up-buffer or --target-r, not both"),
        _ => {}
    }
    Ok((p, target))
}

fn b(x: f64) -> String {
    format!("{x:.0} B")
}

/// What the ratio means for the two links (`r` is finite: the model
/// rejects inputs that make it 0 or infinite).
fn reading(r: f64, k: f64) -> String {
    // Within 0.5 % of k (a sized buffer hits k only to the bisection's
    // precision): the balanced case, not one side of it.
    if (r - k).abs() <= 0.005 * k {
        format!(
            "r = k (to {:.1} %): both links are full; each direction gets about all of its link",
            100.0 * ((r - k) / k).abs()
        )
    } else if r < k {
        format!(
            "r < k: queueing sits mostly in the uplink buffer; with the uplink full the download gets about r/k = {:.0} % of the downlink",
            100.0 * r / k
        )
    } else {
        format!(
            "r > k: queueing sits mostly in the downlink buffer; with the downlink full the upload gets about k/r = {:.0} % of the uplink",
            100.0 * k / r
        )
    }
}

/// The Eq. 6-10 line: both windows, the room left by the ACKs, and r.
fn windows_line(w: &Windows) -> String {
    format!(
        "mean cwnd_d = {}{}, mean cwnd_u = {}{}; B*_d = {}, B*_u = {}; r = cwnd_d/cwnd_u = {:.3}",
        b(w.cwnd_down),
        if w.down_at_tcp_buffer {
            " (= B_TCP)"
        } else {
            ""
        },
        b(w.cwnd_up),
        if w.up_at_tcp_buffer { " (= B_TCP)" } else { "" },
        b(w.b_star_down),
        b(w.b_star_up),
        w.ratio
    )
}

/// Why Eq. 11 (the closed form) may differ from the Eq. 6-10 solution `w`
/// of `p`, if it does: a window at `B_TCP`, or one direction's ACKs more
/// than filling the other's buffer (Eq. 11 lets `B*` go negative).
fn eq11_caveat(p: &Params, w: &Windows) -> Option<&'static str> {
    let a = p.rho_eff();
    if w.down_at_tcp_buffer || w.up_at_tcp_buffer {
        Some("a window is limited by B_TCP, so Eq. 11 (which ignores B_TCP) does not apply; use the Eq. 6-10 value")
    } else if p.up_buffer < a * w.cwnd_down || p.down_buffer < a * w.cwnd_up {
        Some("the ACKs fill a whole buffer (B* clamped at 0), so Eq. 11 (which lets B* go negative) does not apply; use the Eq. 6-10 value")
    } else {
        None
    }
}

/// What [`pendulum_report`] computed.
enum Outcome {
    /// `r` for the given buffers.
    Ratio(Windows),
    /// The uplink buffer for a target `r`.
    Sizing(f64, Sizing),
}

/// Eq. 11's closed-form inverse: `gamma` for `r` and the uplink buffer
/// `(B_d + P_d)/gamma - P_u` (negative when Eq. 11 has no solution).
fn closed_form_up_buffer(p: &Params, r: f64) -> (f64, f64) {
    let g = pendulum::gamma_for_ratio(r, p.rho_eff());
    (g, (p.down_buffer + p.p_down()) / g - p.p_up())
}

/// A sizing error in the flags' terms; an unreachable target also shows
/// what Eq. 11's closed form would have said, and how far off it is.
fn sizing_error(a: &PendulumArgs, p: &Params, r: f64, e: SizingError) -> anyhow::Error {
    if let SizingError::Invalid(e) = &e {
        return param_error(a, e);
    }
    let (_, closed) = closed_form_up_buffer(p, r);
    let eq11 = if closed >= 0.0 && !matches!(e, SizingError::BadTarget(_)) {
        let w = Params {
            up_buffer: closed,
            ..*p
        }
        .solve();
        format!(
            " (Eq. 11's closed form would say B_u = {}, but Eq. 6-10 with that buffer give r = {:.3})",
            b(closed),
            w.ratio
        )
    } else {
        String::new()
    };
    anyhow!("--target-r: {e}{eq11}")
}

/// The text `hopwise model pendulum` prints.
pub fn pendulum_report(a: &PendulumArgs) -> Result<String> {
    let (p, target) = pendulum_params(a)?;
    // Check the inputs and solve (or size) before printing anything.
    let outcome = match target {
        None => Outcome::Ratio(p.solve_checked().map_err(|e| param_error(a, &e))?),
        Some(r) => Outcome::Sizing(
            r,
            p.size_up_buffer(r).map_err(|e| sizing_error(a, &p, r, e))?,
        ),
    };
    let mut s = String::new();
    let k = p.capacity_ratio();
    let _ = writeln!(s, "data pendulum (seed 004, Eq. 6-11)");
    let _ = writeln!(
        s,
        "  capacities      C_d = {:.0} B/s, C_u = {:.0} B/s, k = C_d/C_u = {:.2}",
        p.down_rate, p.up_rate, k
    );
    let _ = writeln!(
        s,
        "  in flight       P_d = C_d·RTT = {}, P_u = C_u·RTT = {} (RTT {:.1} ms)",
        b(p.p_down()),
        b(p.p_up()),
        p.rtt * 1e3
    );
    let _ = writeln!(
        s,
        "  ACK/data        rho = {:.0}/{:.0} = {:.4}; {}: rho' = {:.4}",
        p.ack_size,
        p.data_size,
        p.rho(),
        if p.delayed_ack {
            "delayed ACKs, one ACK per two segments"
        } else {
            "one ACK per segment"
        },
        p.rho_eff()
    );
    let _ = writeln!(s, "  B_TCP           {}", b(p.tcp_buffer));
    match outcome {
        Outcome::Ratio(w) => {
            let _ = writeln!(
                s,
                "  buffers         B_d = {}, B_u = {}",
                b(p.down_buffer),
                b(p.up_buffer)
            );
            let _ = writeln!(
                s,
                "  gamma           (B_d + P_d)/(B_u + P_u) = {:.4}",
                p.gamma()
            );
            if p.ratio().is_finite() {
                let _ = writeln!(
                    s,
                    "Eq. 11          r = (gamma - 3/4 rho')/(1 - 3/4 rho' gamma) = {:.3}   (approximation gamma/(1 - 3/4 rho' gamma) = {:.3})",
                    p.ratio(),
                    p.ratio_approx()
                );
            } else {
                let _ = writeln!(
                    s,
                    "Eq. 11          no value: 3/4 rho' gamma = {:.3} >= 1 (the download's ACKs would take more than the whole uplink buffer and pipe)",
                    0.75 * p.rho_eff() * p.gamma()
                );
            }
            let _ = writeln!(s, "Eq. 6-10        {}", windows_line(&w));
            if let Some(c) = eq11_caveat(&p, &w) {
                let _ = writeln!(s, "                {c}");
            }
            let _ = writeln!(s, "reading         {}", reading(w.ratio, k));
            small_buffer_notes(&mut s, &p, p.up_buffer);
        }
        Outcome::Sizing(r, sz) => {
            let _ = writeln!(s, "  buffers         B_d = {}", b(p.down_buffer));
            let (g, closed) = closed_form_up_buffer(&p, r);
            let approx = (p.down_buffer + p.p_down())
                / pendulum::gamma_for_ratio_approx(r, p.rho_eff())
                - p.p_up();
            let w = sz.windows;
            let _ = writeln!(
                s,
                "target          r = {:.3}{}",
                r,
                if (r - k).abs() < 1e-12 { " (= k)" } else { "" },
            );
            let _ = writeln!(
                s,
                "uplink buffer   B_u = {} ({:.1} full segments): solving Eq. 6-10 for B_u (bisection) gives r = {:.3}",
                b(sz.up_buffer),
                sz.up_buffer / p.data_size,
                w.ratio
            );
            if let Some(up_to) = sz.flat_up_to {
                let _ = writeln!(
                    s,
                    "                the download's ACKs fill this buffer (B*_u = 0): any B_u up to {} gives the same r, the largest reachable",
                    b(up_to)
                );
            }
            let _ = writeln!(s, "Eq. 6-10        {}", windows_line(&w));
            let _ = writeln!(
                s,
                "Eq. 11          gamma = (r + 3/4 rho')/(1 + 3/4 rho' r) = {:.4}; B_u = (B_d + P_d)/gamma - P_u = {}{}",
                g,
                b(closed),
                if closed < 0.0 { " (< 0: no solution)" } else { "" }
            );
            let _ = writeln!(
                s,
                "                (the paper's approximate reciprocal gamma = r/(1 + 3/4 rho' r) gives {}{})",
                b(approx),
                if approx < 0.0 { ", < 0: no solution" } else { "" }
            );
            let sized = Params {
                up_buffer: sz.up_buffer,
                ..p
            };
            if let Some(c) = eq11_caveat(&sized, &w) {
                let _ = writeln!(s, "                {c}");
            }
            let _ = writeln!(s, "reading         {}", reading(w.ratio, k));
            small_buffer_notes(&mut s, &p, sz.up_buffer);
        }
    }
    Ok(s)
}

/// Fewer segments than this in a buffer are outside the model: it treats a
/// buffer as a byte count, while a drop-tail queue that holds one or two
/// segments drops most of what finds the link busy. In the simulator r
/// departs from the model at B_u = 3000 B, two segments
/// (docs/reproductions/pendulum.md, Fig. 10).
const MIN_MODEL_SEGMENTS: f64 = 3.0;

/// A "note" line for each buffer too small for the model.
fn small_buffer_notes(s: &mut String, p: &Params, up_buffer: f64) {
    for (name, v) in [("B_d", p.down_buffer), ("B_u", up_buffer)] {
        if v < MIN_MODEL_SEGMENTS * p.data_size {
            let _ = writeln!(
                s,
                "note            {name} = {} holds {:.1} data segments of {:.0} B; below {MIN_MODEL_SEGMENTS:.0} the byte-count model does not describe a real drop-tail queue, which drops most segments that find the link busy",
                b(v),
                v / p.data_size,
                p.data_size
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reading_names_the_side_and_the_balanced_case() {
        let k = 12.245;
        assert!(reading(k * (1.0 - 1e-6), k).starts_with("r = k"));
        assert!(reading(k * 1.004, k).starts_with("r = k"));
        assert!(reading(6.0, k).starts_with("r < k"));
        assert!(reading(20.0, k).starts_with("r > k"));
    }

    fn args(up: Option<&str>, target: Option<&str>) -> PendulumArgs {
        PendulumArgs {
            down_rate: "2.4Mbit".into(),
            up_rate: "196kbit".into(),
            rtt: "200ms".into(),
            down_buffer: "30000B".into(),
            up_buffer: up.map(Into::into),
            target_r: target.map(Into::into),
            delayed_ack: false,
            no_delayed_ack: false,
            ack_size: "52B".into(),
            data_size: "1500B".into(),
            tcp_buffer: "4MiB".into(),
        }
    }

    #[test]
    fn buffers_of_a_segment_or_two_get_a_note() {
        let out = pendulum_report(&args(Some("15000B"), None)).unwrap();
        assert!(!out.contains("note"), "{out}");
        let out = pendulum_report(&args(Some("3000B"), None)).unwrap();
        assert!(
            out.contains("note            B_u = 3000 B holds 2.0 data segments"),
            "{out}"
        );
        assert!(!out.contains("B_d = 30000 B holds"), "{out}");
        let mut a = args(Some("15000B"), None);
        a.down_buffer = "1B".into();
        let out = pendulum_report(&a).unwrap();
        assert!(
            out.contains("note            B_d = 1 B holds 0.0 data segments"),
            "{out}"
        );
    }

    #[test]
    fn ratio_and_sizing_round_trip() {
        let out = pendulum_report(&args(Some("15000B"), None)).unwrap();
        let p = pendulum_params(&args(Some("15000B"), None)).unwrap().0;
        assert!(out.contains(&format!("{:.3}", p.ratio())), "{out}");
        let target = format!("{}", p.ratio());
        let out = pendulum_report(&args(None, Some(&target))).unwrap();
        // Eq. 6-10 solved for B_u, and Eq. 11's closed form beside it.
        assert!(out.contains("uplink buffer   B_u = 15000 B"), "{out}");
        assert!(
            out.contains("B_u = (B_d + P_d)/gamma - P_u = 15000 B"),
            "{out}"
        );
    }

    #[test]
    fn unreachable_target_is_an_error_with_the_largest_r() {
        // The audit's case: B_d = 60 kB, target 30 (Eq. 11 alone gave 658 B).
        let mut a = args(None, Some("30"));
        a.down_buffer = "60kB".into();
        let p = pendulum_params(&a).unwrap().0;
        let max = p.solve().ratio; // up_buffer is 0 when sizing
        assert!(max < 30.0, "{max}");
        let e = pendulum_report(&a).unwrap_err().to_string();
        assert!(e.starts_with("--target-r: r = 30 is unreachable"), "{e}");
        assert!(e.contains(&format!("largest ratio is r = {max:.4}")), "{e}");
        let closed = p.up_buffer_for_ratio(30.0).unwrap();
        assert!(
            e.contains(&format!("closed form would say B_u = {closed:.0} B")),
            "{e}"
        );
        // Just below the largest r, a buffer is found and meets the target.
        let target = format!("{}", 0.95 * max);
        a.target_r = Some(target.clone());
        let out = pendulum_report(&a).unwrap();
        assert!(
            out.contains(&format!("gives r = {:.3}", 0.95 * max)),
            "{out}"
        );
    }

    #[test]
    fn undefined_model_names_the_flags() {
        let mut a = args(Some("0B"), None);
        a.rtt = "0ms".into();
        a.down_buffer = "0B".into();
        let e = pendulum_report(&a).unwrap_err().to_string();
        assert!(e.starts_with("--rtt 0ms with --down-buffer 0B:"), "{e}");
        assert!(e.contains("undefined"), "{e}");
        a.down_buffer = "10kB".into();
        let e = pendulum_report(&a).unwrap_err().to_string();
        assert!(e.starts_with("--rtt 0ms with --up-buffer 0B:"), "{e}");
        a.up_buffer = Some("100B".into());
        let e = pendulum_report(&a).unwrap_err().to_string();
        assert!(
            e.starts_with("--rtt 0ms with --up-buffer 100B:") && e.contains("ACKs"),
            "{e}"
        );
        for (rtt, ok) in [("1e9s", false), ("120.5s", false), ("120s", true)] {
            let mut a = args(Some("15000B"), None);
            a.rtt = rtt.into();
            match pendulum_report(&a) {
                Ok(_) => assert!(ok, "{rtt} accepted"),
                Err(e) => {
                    let e = e.to_string();
                    assert!(!ok, "{rtt}: {e}");
                    assert!(e.starts_with("--rtt:") && e.contains("too large"), "{e}");
                }
            }
        }
    }

    #[test]
    fn no_nan_or_inf_is_ever_printed() {
        for rtt in ["0ms", "1ms", "200ms"] {
            for bd in ["0B", "100B", "30kB"] {
                for bu in ["0B", "100B", "15kB"] {
                    for delayed in [false, true] {
                        let mut a = args(Some(bu), None);
                        (a.rtt, a.down_buffer, a.no_delayed_ack) = (rtt.into(), bd.into(), delayed);
                        let mut s = args(None, Some("k"));
                        (s.rtt, s.down_buffer, s.no_delayed_ack) = (rtt.into(), bd.into(), delayed);
                        for a in [a, s] {
                            if let Ok(out) = pendulum_report(&a) {
                                let l = out.to_lowercase();
                                assert!(!l.contains("nan") && !l.contains("inf"), "{a:?}\n{out}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn errors_name_the_flag() {
        let mut a = args(Some("15000B"), None);
        a.down_rate = "fast".into();
        let e = pendulum_report(&a).unwrap_err().to_string();
        assert!(e.starts_with("--down-rate:"), "{e}");
        a.down_rate = "10".into();
        let e = pendulum_report(&a).unwrap_err().to_string();
        assert!(
            e.starts_with("--down-rate: a rate needs a unit") && e.contains("`10Mbit`"),
            "{e}"
        );
        a.down_rate = "0Mbit".into();
        let e = pendulum_report(&a).unwrap_err().to_string();
        assert!(
            e.starts_with("--down-rate: `0Mbit` must be positive"),
            "{e}"
        );
        let mut a = args(Some("15000B"), None);
        a.rtt = "200".into();
        let e = pendulum_report(&a).unwrap_err().to_string();
        assert!(e.starts_with("--rtt: a duration needs a unit"), "{e}");
        let mut a = args(Some("15 apples"), None);
        a.up_buffer = Some("15 apples".into());
        assert!(pendulum_report(&a)
            .unwrap_err()
            .to_string()
            .starts_with("--up-buffer:"));
        let mut a = args(Some("15000B"), None);
        a.data_size = "40B".into();
        let e = pendulum_report(&a).unwrap_err().to_string();
        assert!(e.starts_with("--data-size: `40B`"), "{e}");
        let e = pendulum_report(&args(None, Some("-3")))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--target-r:"), "{e}");
        let e = pendulum_report(&args(None, Some("1000")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unreachable"), "{e}");
        // Neither --up-buffer nor --target-r, or both delayed-ACK flags.
        let e = pendulum_report(&args(None, None)).unwrap_err().to_string();
        assert!(e.contains("--up-buffer") && e.contains("--target-r"), "{e}");
        let mut a = args(Some("15000B"), None);
        (a.delayed_ack, a.no_delayed_ack) = (true, true);
        let e = pendulum_report(&a).unwrap_err().to_string();
        assert!(
            e.contains("--delayed-ack") && e.contains("--no-delayed-ack"),
            "{e}"
        );
    }
}
