//! The data pendulum (seed 004, Heusse et al., "Two-way TCP connections: old
//! problem, new insight", §3.1): the throughput ratio `r = Xd / Xu` of a
//! download and an upload that share a link with capacities `C_d` (down) and
//! `C_u` (up) and drop-tail buffers of `B_d` and `B_u` bytes.
//!
//! Under the pendulum effect only one of the two buffers holds data at a
//! time, so each congestion window is limited by its own buffer plus the data
//! in flight on the link, minus the room the other connection's ACKs take in
//! that buffer:
//!
//! ```text
//! mean cwnd_x = B_TCP                if B*_x + P_x > B_TCP          (Eq. 6)
//!             = 3/4 (B*_x + P_x)     otherwise
//! B*_u = B_u − ρ' · mean cwnd_d                                    (Eq. 7, 8)
//! B*_d = B_d − ρ' · mean cwnd_u                                    (Eq. 9, 10)
//! r ≈ cwnd_d / cwnd_u = (γ − ¾ρ') / (1 − ¾ρ'γ) ≈ γ / (1 − ¾ρ'γ)     (Eq. 11)
//! γ = (B_d + P_d) / (B_u + P_u),   P_x = C_x · RTT  (the paper's 2·C_x·T_p)
//! ```
//!
//! `ρ = ack size / data size` (a pure ACK with timestamps is 52 B, a full
//! segment 1500 B, so ρ = 0.0347 ≈ 1/29). With delayed ACKs there is one ACK
//! per two segments and the effective ratio is `ρ' = ρ/2` (Eq. 7 and 9);
//! without, `ρ' = ρ` (Eq. 8 and 10). The paper writes Eq. 11 with `ρ`; it is
//! the closed-form solution of Eq. 6–10 for any `ρ'`, so we use `ρ'`.
//!
//! All quantities are plain `f64`: bytes, bytes per second and seconds.

/// Inputs of the model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Downlink capacity `C_d`, bytes per second.
    pub down_rate: f64,
    /// Uplink capacity `C_u`, bytes per second.
    pub up_rate: f64,
    /// Round-trip propagation delay without queueing (the paper's `2·T_p`), seconds.
    pub rtt: f64,
    /// Downlink buffer `B_d`, bytes.
    pub down_buffer: f64,
    /// Uplink buffer `B_u`, bytes.
    pub up_buffer: f64,
    /// The receivers delay their ACKs (one ACK per two full segments).
    pub delayed_ack: bool,
    /// Size of a pure ACK on the wire, bytes (52 with timestamps).
    pub ack_size: f64,
    /// Size of a full data segment on the wire, bytes (1500).
    pub data_size: f64,
    /// `B_TCP`: the smaller of the sender's and the receiver's TCP buffers, bytes.
    pub tcp_buffer: f64,
}

/// Wire size of a pure ACK with the timestamp option (hopwise's TCP model, Linux's layout).
pub const ACK_SIZE: f64 = 52.0;
/// Wire size of a full-sized data segment (1500 B MTU).
pub const DATA_SIZE: f64 = 1500.0;
/// hopwise's default TCP send and receive buffer (4 MiB).
pub const DEFAULT_TCP_BUFFER: f64 = (4u64 << 20) as f64;

impl Params {
    /// The paper's asymmetric ADSL link (2.4 Mbit/s down, 196 kbit/s up), with
    /// the given round-trip propagation delay and buffers, delayed ACKs, hopwise's
    /// wire sizes and default TCP buffers.
    pub fn adsl(rtt: f64, down_buffer: f64, up_buffer: f64) -> Params {
        Params {
            down_rate: 2.4e6 / 8.0,
            up_rate: 196e3 / 8.0,
            rtt,
            down_buffer,
            up_buffer,
            delayed_ack: true,
            ack_size: ACK_SIZE,
            data_size: DATA_SIZE,
            tcp_buffer: DEFAULT_TCP_BUFFER,
        }
    }

    /// `ρ`: ACK size over data segment size.
    pub fn rho(&self) -> f64 {
        self.ack_size / self.data_size
    }

    /// `ρ'`: ACK bytes per data byte, `ρ/2` with delayed ACKs, `ρ` without.
    pub fn rho_eff(&self) -> f64 {
        if self.delayed_ack {
            self.rho() / 2.0
        } else {
            self.rho()
        }
    }

    /// `P_d = C_d · RTT`: downlink data in flight on the link, bytes.
    pub fn p_down(&self) -> f64 {
        self.down_rate * self.rtt
    }

    /// `P_u = C_u · RTT`: uplink data in flight on the link, bytes.
    pub fn p_up(&self) -> f64 {
        self.up_rate * self.rtt
    }

    /// `γ = (B_d + P_d) / (B_u + P_u)`.
    pub fn gamma(&self) -> f64 {
        (self.down_buffer + self.p_down()) / (self.up_buffer + self.p_up())
    }

    /// `k = C_d / C_u`, the capacity ratio: the `r` at which both links are full.
    pub fn capacity_ratio(&self) -> f64 {
        self.down_rate / self.up_rate
    }

    /// Eq. 11, exact form: `r = (γ − ¾ρ') / (1 − ¾ρ'γ)`.
    pub fn ratio(&self) -> f64 {
        ratio_eq11(self.gamma(), self.rho_eff())
    }

    /// Eq. 11, the paper's approximation `r ≈ γ / (1 − ¾ρ'γ)`.
    pub fn ratio_approx(&self) -> f64 {
        ratio_eq11_approx(self.gamma(), self.rho_eff())
    }

    /// Eq. 6–10 solved for the mean windows (with the `B_TCP` limit).
    pub fn solve(&self) -> Windows {
        solve(self)
    }

    /// The uplink buffer (bytes) for which Eq. 11 gives `r = target`; the
    /// rest of the parameters (`up_buffer` is ignored) stay as they are.
    pub fn up_buffer_for_ratio(&self, target: f64) -> Result<f64, SizingError> {
        up_buffer_for_ratio(self, target)
    }
}

/// Eq. 11: `r = (γ − ¾ρ') / (1 − ¾ρ'γ)`, infinite when the denominator is
/// not positive (the uplink buffer cannot even hold the download's ACKs).
pub fn ratio_eq11(gamma: f64, rho_eff: f64) -> f64 {
    let c = 0.75 * rho_eff;
    let den = 1.0 - c * gamma;
    if den <= 0.0 {
        return f64::INFINITY;
    }
    ((gamma - c) / den).max(0.0)
}

/// Eq. 11's approximation `r ≈ γ / (1 − ¾ρ'γ)`.
pub fn ratio_eq11_approx(gamma: f64, rho_eff: f64) -> f64 {
    let den = 1.0 - 0.75 * rho_eff * gamma;
    if den <= 0.0 {
        return f64::INFINITY;
    }
    gamma / den
}

/// The inverse of Eq. 11 (exact form): the `γ` that gives `r`,
/// `γ = (r + ¾ρ') / (1 + ¾ρ'r)`.
pub fn gamma_for_ratio(r: f64, rho_eff: f64) -> f64 {
    let c = 0.75 * rho_eff;
    (r + c) / (1.0 + c * r)
}

/// The paper's reciprocal relation, the inverse of the approximate form:
/// `γ = r / (1 + ¾ρ'r)`.
pub fn gamma_for_ratio_approx(r: f64, rho_eff: f64) -> f64 {
    r / (1.0 + 0.75 * rho_eff * r)
}

/// The mean windows of Eq. 6–10 and what limited them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Windows {
    /// Mean download congestion window, bytes.
    pub cwnd_down: f64,
    /// Mean upload congestion window, bytes.
    pub cwnd_up: f64,
    /// `B*_d`: downlink buffer left by the upload's ACKs, bytes (≥ 0).
    pub b_star_down: f64,
    /// `B*_u`: uplink buffer left by the download's ACKs, bytes (≥ 0).
    pub b_star_up: f64,
    /// The download window sits at `B_TCP`.
    pub down_at_tcp_buffer: bool,
    /// The upload window sits at `B_TCP`.
    pub up_at_tcp_buffer: bool,
    /// `cwnd_down / cwnd_up` (Eq. 11's first approximation).
    pub ratio: f64,
    /// Iterations the fixed point took.
    pub iterations: u32,
}

/// Eq. 6 for one direction: the mean window given the buffer left by the
/// other direction's ACKs.
fn mean_window(b_star: f64, p: f64, tcp_buffer: f64) -> f64 {
    if b_star + p > tcp_buffer {
        tcp_buffer
    } else {
        0.75 * (b_star + p)
    }
}

/// Solves Eq. 6–10 for the mean windows by Gauss–Seidel iteration.
///
/// Each window is a non-increasing function of the other, so the iteration
/// `W_d ← f_d(W_u), W_u ← f_u(W_d)` moves `W_d` monotonically and converges
/// (the coupling ¾ρ' is about 0.013–0.026). Without the `B_TCP` limit and with
/// non-negative `B*` the fixed point is exactly Eq. 11's exact form; `B*` is
/// clamped at 0 when the other direction's ACKs would fill a whole buffer.
pub fn solve(p: &Params) -> Windows {
    let a = p.rho_eff();
    let (pd, pu) = (p.p_down(), p.p_up());
    let mut wd = mean_window(p.down_buffer, pd, p.tcp_buffer);
    let mut wu = 0.0;
    let mut iterations = 0;
    for i in 1..=10_000 {
        iterations = i;
        let bu = (p.up_buffer - a * wd).max(0.0);
        let wu_new = mean_window(bu, pu, p.tcp_buffer);
        let bd = (p.down_buffer - a * wu_new).max(0.0);
        let wd_new = mean_window(bd, pd, p.tcp_buffer);
        let done = (wd_new - wd).abs() <= 1e-9 * wd.abs().max(1.0)
            && (wu_new - wu).abs() <= 1e-9 * wu.abs().max(1.0);
        wd = wd_new;
        wu = wu_new;
        if done {
            break;
        }
    }
    let b_star_up = (p.up_buffer - a * wd).max(0.0);
    let b_star_down = (p.down_buffer - a * wu).max(0.0);
    Windows {
        cwnd_down: wd,
        cwnd_up: wu,
        b_star_down,
        b_star_up,
        down_at_tcp_buffer: b_star_down + pd > p.tcp_buffer,
        up_at_tcp_buffer: b_star_up + pu > p.tcp_buffer,
        ratio: if wu > 0.0 { wd / wu } else { f64::INFINITY },
        iterations,
    }
}

/// Why no uplink buffer gives the requested ratio.
#[derive(Clone, Debug, PartialEq)]
pub enum SizingError {
    /// The target is not a positive finite number.
    BadTarget(f64),
    /// Even an empty uplink buffer gives a smaller ratio: the downlink buffer
    /// (plus its in-flight data) is too small. `max_ratio` is r at `B_u = 0`.
    Unreachable { max_ratio: f64 },
}

impl std::fmt::Display for SizingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SizingError::BadTarget(r) => write!(f, "target ratio {r} is not a positive number"),
            SizingError::Unreachable { max_ratio } => write!(
                f,
                "no uplink buffer reaches this ratio: even an empty uplink buffer gives r = {max_ratio:.3}; enlarge the downlink buffer"
            ),
        }
    }
}

impl std::error::Error for SizingError {}

/// The paper's inverse relation: the uplink buffer `B_u` (bytes) for which
/// Eq. 11 gives `r = target`: `γ = (r + ¾ρ')/(1 + ¾ρ'r)`, then
/// `B_u = (B_d + P_d)/γ − P_u`. `p.up_buffer` is ignored.
pub fn up_buffer_for_ratio(p: &Params, target: f64) -> Result<f64, SizingError> {
    if !(target.is_finite() && target > 0.0) {
        return Err(SizingError::BadTarget(target));
    }
    let g = gamma_for_ratio(target, p.rho_eff());
    let bu = (p.down_buffer + p.p_down()) / g - p.p_up();
    if bu < 0.0 {
        let max_ratio = Params {
            up_buffer: 0.0,
            ..*p
        }
        .ratio();
        return Err(SizingError::Unreachable { max_ratio });
    }
    Ok(bu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq11_and_inverse_agree() {
        let p = Params::adsl(0.2, 30_000.0, 15_000.0);
        let r = p.ratio();
        let bu = p.up_buffer_for_ratio(r).unwrap();
        assert!((bu - 15_000.0).abs() < 1e-6, "{bu}");
    }

    #[test]
    fn fixed_point_is_eq11_without_limits() {
        let p = Params::adsl(0.2, 30_000.0, 15_000.0);
        let w = p.solve();
        assert!((w.ratio - p.ratio()).abs() < 1e-9 * p.ratio());
        assert!(!w.down_at_tcp_buffer && !w.up_at_tcp_buffer);
    }
}
