//! `hopwise model <name>`: the seed papers' analytical models as calculators.
//! Each model is one subcommand of [`ModelCmd`]; quantities are written with
//! units and parsed by `hopwise_proto::units`.

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use hopwise_models::pendulum::{self, Params};
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
    after_help = "Examples: hopwise model pendulum --down-rate 2.4Mbit --up-rate 196kbit \
--rtt 200ms --down-buffer 30000B --up-buffer 15000B\n          hopwise model pendulum \
--down-rate 2.4Mbit --up-rate 196kbit --rtt 200ms --down-buffer 60kB --target-r k"
)]
pub struct PendulumArgs {
    /// Downlink capacity C_d, e.g. `2.4Mbit`.
    #[arg(long, value_name = "RATE")]
    pub down_rate: String,
    /// Uplink capacity C_u, e.g. `196kbit`.
    #[arg(long, value_name = "RATE")]
    pub up_rate: String,
    /// Round-trip propagation delay without queueing (the paper's 2·Tp), e.g. `200ms`.
    #[arg(long, value_name = "DURATION")]
    pub rtt: String,
    /// Downlink (drop-tail) buffer B_d in bytes, e.g. `30000B` or `30kB`.
    #[arg(long, value_name = "BYTES")]
    pub down_buffer: String,
    /// Uplink buffer B_u in bytes. Leave it out and give --target-r to size it.
    #[arg(long, value_name = "BYTES", required_unless_present = "target_r")]
    pub up_buffer: Option<String>,
    /// Print the uplink buffer that gives this ratio r = Xd/Xu (a number, or
    /// `k` for the capacity ratio C_d/C_u, at which both links are full).
    #[arg(long, value_name = "R", conflicts_with = "up_buffer")]
    pub target_r: Option<String>,
    /// The receivers delay their ACKs (one ACK per two full segments; the default).
    #[arg(long, overrides_with = "no_delayed_ack")]
    pub delayed_ack: bool,
    /// One ACK per segment.
    #[arg(long, overrides_with = "delayed_ack")]
    pub no_delayed_ack: bool,
    /// Wire size of a pure ACK (52 B with timestamps; SACK blocks add 8 B each).
    #[arg(long, value_name = "BYTES", default_value = "52B")]
    pub ack_size: String,
    /// Wire size of a full data segment.
    #[arg(long, value_name = "BYTES", default_value = "1500B")]
    pub data_size: String,
    /// B_TCP, the smaller of the TCP send and receive buffers (hopwise's default 4 MiB).
    #[arg(long, value_name = "BYTES", default_value = "4MiB")]
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
    let r = parse_rate(v).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
    if r.bps() == 0 {
        bail!("{flag}: `{v}` must be positive");
    }
    Ok(r.bytes_per_sec())
}

fn bytes_arg(flag: &str, v: &str) -> Result<f64> {
    Ok(parse_bytes(v)
        .map_err(|e| anyhow::anyhow!("{flag}: {e}"))?
        .0 as f64)
}

/// The parsed parameters (with `up_buffer` 0 when sizing) and the target ratio, if any.
pub fn pendulum_params(a: &PendulumArgs) -> Result<(Params, Option<f64>)> {
    let down_rate = rate_arg("--down-rate", &a.down_rate)?;
    let up_rate = rate_arg("--up-rate", &a.up_rate)?;
    let rtt = parse_duration(&a.rtt)
        .map_err(|e| anyhow::anyhow!("--rtt: {e}"))?
        .as_secs_f64();
    let down_buffer = bytes_arg("--down-buffer", &a.down_buffer)?;
    let up_buffer = match &a.up_buffer {
        Some(v) => bytes_arg("--up-buffer", v)?,
        None => 0.0,
    };
    let ack_size = bytes_arg("--ack-size", &a.ack_size)?;
    let data_size = bytes_arg("--data-size", &a.data_size)?;
    if ack_size <= 0.0 {
        bail!("--ack-size: `{}` must be positive", a.ack_size);
    }
    if data_size <= ack_size {
        bail!(
            "--data-size: `{}` must be larger than the ACK size ({} B)",
            a.data_size,
            ack_size
        );
    }
    let tcp_buffer = bytes_arg("--tcp-buffer", &a.tcp_buffer)?;
    if tcp_buffer <= 0.0 {
        bail!("--tcp-buffer: `{}` must be positive", a.tcp_buffer);
    }
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
    if a.up_buffer.is_none() && target.is_none() {
        bail!("give --up-buffer (to compute r) or --target-r (to size the uplink buffer)");
    }
    Ok((p, target))
}

fn b(x: f64) -> String {
    format!("{x:.0} B")
}

/// What the ratio means for the two links.
fn reading(r: f64, k: f64) -> String {
    if !r.is_finite() {
        "the uplink buffer cannot even hold the download's ACKs: the upload starves".into()
    } else if r < k {
        format!(
            "r < k: queueing sits mostly in the uplink buffer; with the uplink full the download gets about r/k = {:.0} % of the downlink",
            100.0 * r / k
        )
    } else {
        format!(
            "r >= k: queueing sits mostly in the downlink buffer; with the downlink full the upload gets about k/r = {:.0} % of the uplink",
            100.0 * k / r
        )
    }
}

/// The text `hopwise model pendulum` prints.
pub fn pendulum_report(a: &PendulumArgs) -> Result<String> {
    let (p, target) = pendulum_params(a)?;
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
    match target {
        None => {
            let w = p.solve();
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
            let _ = writeln!(
                s,
                "Eq. 11          r = (gamma - 3/4 rho')/(1 - 3/4 rho' gamma) = {:.3}   (approximation gamma/(1 - 3/4 rho' gamma) = {:.3})",
                p.ratio(),
                p.ratio_approx()
            );
            let _ = writeln!(
                s,
                "Eq. 6-10        mean cwnd_d = {}{}, mean cwnd_u = {}{}; B*_d = {}, B*_u = {}; r = cwnd_d/cwnd_u = {:.3}",
                b(w.cwnd_down),
                if w.down_at_tcp_buffer { " (= B_TCP)" } else { "" },
                b(w.cwnd_up),
                if w.up_at_tcp_buffer { " (= B_TCP)" } else { "" },
                b(w.b_star_down),
                b(w.b_star_up),
                w.ratio
            );
            if w.down_at_tcp_buffer || w.up_at_tcp_buffer {
                let _ = writeln!(
                    s,
                    "                a window is limited by B_TCP, so Eq. 11 (which ignores B_TCP) does not apply; use the Eq. 6-10 value"
                );
            }
            let _ = writeln!(s, "reading         {}", reading(w.ratio, k));
        }
        Some(r) => {
            let _ = writeln!(s, "  buffers         B_d = {}", b(p.down_buffer));
            let g = pendulum::gamma_for_ratio(r, p.rho_eff());
            let _ = writeln!(
                s,
                "target          r = {:.3}{}: gamma = (r + 3/4 rho')/(1 + 3/4 rho' r) = {:.4}",
                r,
                if (r - k).abs() < 1e-12 { " (= k)" } else { "" },
                g
            );
            match p.up_buffer_for_ratio(r) {
                Ok(bu) => {
                    let _ = writeln!(
                        s,
                        "uplink buffer   B_u = (B_d + P_d)/gamma - P_u = {} ({:.1} full segments)",
                        b(bu),
                        bu / p.data_size
                    );
                    let approx = (p.down_buffer + p.p_down())
                        / pendulum::gamma_for_ratio_approx(r, p.rho_eff())
                        - p.p_up();
                    let _ = writeln!(
                        s,
                        "                (the paper's approximate reciprocal gamma = r/(1 + 3/4 rho' r) gives {})",
                        b(approx.max(0.0))
                    );
                    let w = Params { up_buffer: bu, ..p }.solve();
                    let _ = writeln!(
                        s,
                        "check           Eq. 6-10 with this buffer: r = {:.3}{}",
                        w.ratio,
                        if w.down_at_tcp_buffer || w.up_at_tcp_buffer {
                            " (a window hits B_TCP: enlarge --tcp-buffer or expect a different r)"
                        } else {
                            ""
                        }
                    );
                    let _ = writeln!(s, "reading         {}", reading(r, k));
                }
                Err(e) => bail!("--target-r: {e}"),
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn ratio_and_sizing_round_trip() {
        let out = pendulum_report(&args(Some("15000B"), None)).unwrap();
        let p = pendulum_params(&args(Some("15000B"), None)).unwrap().0;
        assert!(out.contains(&format!("{:.3}", p.ratio())), "{out}");
        let target = format!("{}", p.ratio());
        let out = pendulum_report(&args(None, Some(&target))).unwrap();
        assert!(
            out.contains("B_u = (B_d + P_d)/gamma - P_u = 15000 B"),
            "{out}"
        );
    }

    #[test]
    fn errors_name_the_flag() {
        let mut a = args(Some("15000B"), None);
        a.down_rate = "fast".into();
        let e = pendulum_report(&a).unwrap_err().to_string();
        assert!(e.starts_with("--down-rate:"), "{e}");
        let mut a = args(Some("15 apples"), None);
        a.up_buffer = Some("15 apples".into());
        assert!(pendulum_report(&a)
            .unwrap_err()
            .to_string()
            .starts_with("--up-buffer:"));
        let e = pendulum_report(&args(None, Some("-3")))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--target-r:"), "{e}");
        // r far above what an empty uplink buffer gives.
        let e = pendulum_report(&args(None, Some("1000")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no uplink buffer"), "{e}");
    }
}
