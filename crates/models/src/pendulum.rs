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
//! Sizing: [`up_buffer_for_ratio`] is the paper's closed-form inverse of
//! Eq. 11; [`size_up_buffer`] solves Eq. 6–10 themselves for `B_u` (by
//! bisection) and says when a target is out of their reach. They agree
//! unless `B_TCP` binds or the download's ACKs fill the uplink buffer.
//! [`Params::solve_checked`] rejects inputs out of range or for which the
//! model is undefined (e.g. a zero RTT with an empty buffer).
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

    /// The uplink buffer for which Eq. 6–10 (the fixed point, with the
    /// `B_TCP` limit and `B*` clamped at 0) give `r = target`; `up_buffer`
    /// is ignored. See [`size_up_buffer`].
    pub fn size_up_buffer(&self, target: f64) -> Result<Sizing, SizingError> {
        size_up_buffer(self, target)
    }

    /// Checks that every input is in range (see [`ParamError`]) and that the
    /// model is defined for them, and solves Eq. 6–10: both mean windows must
    /// be positive, or `r = cwnd_d / cwnd_u` means nothing.
    pub fn solve_checked(&self) -> Result<Windows, ParamError> {
        self.check_inputs()?;
        if self.up_buffer + self.p_up() <= 0.0 {
            return Err(ParamError::NoRoom { up: true });
        }
        let w = self.solve();
        check_windows(self, &w)?;
        Ok(w)
    }

    /// The range checks of [`Params::solve_checked`] that do not depend on
    /// the uplink buffer's effect (it is still range-checked), plus room for
    /// the download's data (`B_d + P_d > 0`).
    fn check_inputs(&self) -> Result<(), ParamError> {
        use Param::*;
        let bad = |param, value, problem| {
            Err(ParamError::Bad {
                param,
                value,
                problem,
            })
        };
        for (param, value) in [
            (DownRate, self.down_rate),
            (UpRate, self.up_rate),
            (Rtt, self.rtt),
            (DownBuffer, self.down_buffer),
            (UpBuffer, self.up_buffer),
            (AckSize, self.ack_size),
            (DataSize, self.data_size),
            (TcpBuffer, self.tcp_buffer),
        ] {
            if !value.is_finite() {
                return bad(param, value, "is not a finite number");
            }
            if value < 0.0 {
                return bad(param, value, "is negative");
            }
        }
        for (param, value) in [
            (DownRate, self.down_rate),
            (UpRate, self.up_rate),
            (AckSize, self.ack_size),
            (TcpBuffer, self.tcp_buffer),
        ] {
            if value <= 0.0 {
                return bad(param, value, "must be positive");
            }
        }
        if self.rtt > MAX_RTT {
            return bad(
                Rtt,
                self.rtt,
                "is too large: the model takes RTTs up to 120 s (Linux caps TCP's retransmission timeout at 120 s, so with a longer RTT every segment would time out before its ACK returned)",
            );
        }
        if self.data_size <= self.ack_size {
            return bad(
                DataSize,
                self.data_size,
                "must be larger than the ACK size (the model needs rho = ACK size / data size < 1)",
            );
        }
        if self.down_buffer + self.p_down() <= 0.0 {
            return Err(ParamError::NoRoom { up: false });
        }
        Ok(())
    }
}

/// Largest round-trip propagation delay the model accepts, seconds: Linux
/// caps TCP's retransmission timeout at 120 s (`TCP_RTO_MAX`), so on a path
/// with a longer RTT every segment would time out before its ACK arrived.
pub const MAX_RTT: f64 = 120.0;

/// An input of [`Params`], to name it in an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    DownRate,
    UpRate,
    Rtt,
    DownBuffer,
    UpBuffer,
    AckSize,
    DataSize,
    TcpBuffer,
}

impl Param {
    /// The paper's symbol (or a short name).
    pub fn symbol(self) -> &'static str {
        match self {
            Param::DownRate => "C_d",
            Param::UpRate => "C_u",
            Param::Rtt => "RTT",
            Param::DownBuffer => "B_d",
            Param::UpBuffer => "B_u",
            Param::AckSize => "ACK size",
            Param::DataSize => "data size",
            Param::TcpBuffer => "B_TCP",
        }
    }
}

/// Inputs for which the model is out of range or undefined.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamError {
    /// One input is out of range; `problem` says how ("must be positive").
    Bad {
        param: Param,
        value: f64,
        problem: &'static str,
    },
    /// A direction has nowhere to keep data, `B_x + P_x = 0` (an empty
    /// buffer and a zero RTT): its window, and so `r`, are undefined.
    NoRoom {
        /// The uplink (`B_u + P_u = 0`), or the downlink.
        up: bool,
    },
    /// With a zero RTT nothing is in flight, and the other direction's ACKs
    /// (`acks` bytes, `ρ'` times its mean window) fill this direction's whole
    /// buffer, so its mean window is 0 and `r` is 0 or infinite.
    AcksFillBuffer { up: bool, acks: f64 },
}

impl ParamError {
    /// The inputs at fault, the main one first.
    pub fn params(&self) -> Vec<Param> {
        match *self {
            ParamError::Bad { param, .. } => vec![param],
            ParamError::NoRoom { up: true } | ParamError::AcksFillBuffer { up: true, .. } => {
                vec![Param::Rtt, Param::UpBuffer]
            }
            ParamError::NoRoom { up: false } | ParamError::AcksFillBuffer { up: false, .. } => {
                vec![Param::Rtt, Param::DownBuffer]
            }
        }
    }
}

fn dir_names(up: bool) -> (&'static str, &'static str, &'static str, &'static str) {
    if up {
        ("B_u + P_u", "uplink", "upload", "download")
    } else {
        ("B_d + P_d", "downlink", "download", "upload")
    }
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ParamError::Bad {
                param,
                value,
                problem,
            } => write!(f, "{} = {value} {problem}", param.symbol()),
            ParamError::NoRoom { up } => {
                let (sum, link, conn, _) = dir_names(up);
                write!(
                    f,
                    "{sum} = 0 (a zero RTT and an empty {link} buffer): the {conn} has no room for data, so its window and r = Xd/Xu are undefined; give a positive RTT or {link} buffer"
                )
            }
            ParamError::AcksFillBuffer { up, acks } => {
                let (_, link, conn, other) = dir_names(up);
                write!(
                    f,
                    "with a zero RTT nothing is in flight, and the {other}'s ACKs ({acks:.0} B) fill the whole {link} buffer, so the {conn}'s mean window is 0 and r = Xd/Xu is undefined; give a positive RTT or make the {link} buffer larger than {acks:.0} B"
                )
            }
        }
    }
}

impl std::error::Error for ParamError {}

/// Both windows of a solution must be positive and finite.
fn check_windows(p: &Params, w: &Windows) -> Result<(), ParamError> {
    let a = p.rho_eff();
    for (up, win) in [(true, w.cwnd_up), (false, w.cwnd_down)] {
        if !(win.is_finite() && win > 0.0) {
            let (other_win, own_buffer, own_p) = if up {
                (w.cwnd_down, p.up_buffer, p.p_up())
            } else {
                (w.cwnd_up, p.down_buffer, p.p_down())
            };
            return Err(if own_buffer + own_p <= 0.0 {
                ParamError::NoRoom { up }
            } else {
                ParamError::AcksFillBuffer {
                    up,
                    acks: a * other_win,
                }
            });
        }
    }
    Ok(())
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
    /// (plus its in-flight data) is too small. `max_ratio` is r at `B_u = 0`
    /// (Eq. 11's closed form, [`up_buffer_for_ratio`]).
    Unreachable { max_ratio: f64 },
    /// [`size_up_buffer`]: under Eq. 6–10 even an empty uplink buffer gives
    /// a smaller ratio, `max_ratio`; so does every `B_u` up to
    /// `flat_up_to`, which the download's ACKs fill (`B*_u = 0`).
    TooHigh {
        target: f64,
        max_ratio: f64,
        flat_up_to: f64,
    },
    /// [`size_up_buffer`]: even an unbounded uplink buffer gives a larger
    /// ratio, `min_ratio`, reached from `B_u = from_up_buffer` on, where the
    /// upload's window stops at `B_TCP`.
    TooLow {
        target: f64,
        min_ratio: f64,
        from_up_buffer: f64,
    },
    /// [`size_up_buffer`]: r jumps over the target at `B_u ≈ at_up_buffer`,
    /// from `upper` (smaller buffers) to `lower`, where a window crosses its
    /// `B_TCP` limit (Eq. 6 jumps between `¾·B_TCP` and `B_TCP`).
    Gap {
        target: f64,
        upper: f64,
        lower: f64,
        at_up_buffer: f64,
    },
    /// [`size_up_buffer`]: the other inputs are out of range or the model is
    /// undefined for them.
    Invalid(ParamError),
}

impl std::fmt::Display for SizingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SizingError::BadTarget(r) => write!(f, "target ratio {r} is not a positive number"),
            SizingError::Unreachable { max_ratio } => write!(
                f,
                "no uplink buffer reaches this ratio: even an empty uplink buffer gives r = {max_ratio:.3}; enlarge the downlink buffer"
            ),
            SizingError::TooHigh {
                target,
                max_ratio,
                flat_up_to,
            } => write!(
                f,
                "r = {target} is unreachable: under Eq. 6-10 the largest ratio is r = {}, with an empty uplink buffer (or any up to {flat_up_to:.0} B, which the download's ACKs fill); a larger downlink buffer raises it",
                sig(*max_ratio)
            ),
            SizingError::TooLow {
                target,
                min_ratio,
                from_up_buffer,
            } => write!(
                f,
                "r = {target} is unreachable: under Eq. 6-10 the smallest ratio is r = {}, from an uplink buffer of {from_up_buffer:.0} B on, where the upload's window stops at B_TCP; a larger B_TCP or a smaller downlink buffer lowers it",
                sig(*min_ratio)
            ),
            SizingError::Gap {
                target,
                upper,
                lower,
                at_up_buffer,
            } => write!(
                f,
                "r = {target} is unreachable: under Eq. 6-10, r jumps from {} to {} at an uplink buffer of about {at_up_buffer:.0} B, where a window crosses its B_TCP limit (Eq. 6 jumps between 3/4 B_TCP and B_TCP there); pick a target outside that range or change B_TCP",
                sig(*upper),
                sig(*lower)
            ),
            SizingError::Invalid(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SizingError {}

/// `x` with six significant digits, so that a bound printed in an error
/// is within [`SIZING_TOLERANCE`] of the true one and can be used as a target.
fn sig(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return format!("{x}");
    }
    let decimals = (5 - x.abs().log10().floor() as i32).clamp(0, 17) as usize;
    format!("{x:.decimals$}")
}

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

/// The result of [`size_up_buffer`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sizing {
    /// The uplink buffer `B_u`, bytes: the smallest for which Eq. 6–10 give
    /// `r ≤ target` (and `r` is within [`SIZING_TOLERANCE`] of the target).
    pub up_buffer: f64,
    /// Eq. 6–10 solved with that buffer.
    pub windows: Windows,
    /// When the download's ACKs fill that buffer (`B*_u = 0`, only at the
    /// largest reachable ratio), every `B_u` up to this gives the same `r`.
    pub flat_up_to: Option<f64>,
}

/// Relative tolerance within which [`size_up_buffer`] must meet its target
/// (0.01 %: far below the model's own accuracy, far above the bisection's).
/// A target this close to the largest or smallest reachable ratio is taken
/// as that bound.
pub const SIZING_TOLERANCE: f64 = 1e-4;

/// Sizes the uplink buffer by solving Eq. 6–10 themselves: the smallest
/// `B_u` for which [`solve`] gives `r ≤ target`, by bisection on `B_u`.
/// `p.up_buffer` is ignored.
///
/// Under Eq. 6–10 `r` is a non-increasing function of `B_u` (a larger
/// uplink buffer can only grow the upload's window and, through its ACKs,
/// shrink the download's), constant at its largest value while the
/// download's ACKs fill the uplink buffer (`B_u ≤ ρ'·cwnd_d`) and at its
/// smallest once the upload's window is `B_TCP`. It is continuous except
/// where a window reaches `B_TCP` (Eq. 6 jumps from `¾·B_TCP` to `B_TCP`).
/// Targets outside the range, or inside such a jump, are errors that give
/// the reachable bounds. Eq. 11's closed form ([`up_buffer_for_ratio`])
/// agrees where neither limit is active; elsewhere it is wrong (it lets the
/// ACKs take more than the whole uplink buffer, `B*_u < 0`).
pub fn size_up_buffer(p: &Params, target: f64) -> Result<Sizing, SizingError> {
    if !(target.is_finite() && target > 0.0) {
        return Err(SizingError::BadTarget(target));
    }
    let base = Params {
        up_buffer: 0.0,
        ..*p
    };
    base.check_inputs().map_err(SizingError::Invalid)?;
    let at = |bu: f64| {
        Params {
            up_buffer: bu,
            ..*p
        }
        .solve()
    };
    let top = at(0.0);
    // With B_u ≤ ρ'·cwnd_d(B_u = 0), B*_u = 0 and the solution is the same.
    let flat_up_to = p.rho_eff() * top.cwnd_down;
    if target > top.ratio * (1.0 + SIZING_TOLERANCE) {
        return Err(SizingError::TooHigh {
            target,
            max_ratio: top.ratio,
            flat_up_to,
        });
    }
    // From here on the upload's window is B_TCP: B*_u + P_u ≥ B_u − ρ'·B_TCP > B_TCP.
    let mut hi = p.tcp_buffer * (1.0 + p.rho_eff()) + 1.0;
    let bottom = at(hi);
    if target < bottom.ratio * (1.0 - SIZING_TOLERANCE) {
        return Err(SizingError::TooLow {
            target,
            min_ratio: bottom.ratio,
            from_up_buffer: (p.tcp_buffer + p.rho_eff() * bottom.cwnd_down - p.p_up()).max(0.0),
        });
    }
    // Within the tolerance of a bound, aim at the bound.
    let goal = target.clamp(bottom.ratio, top.ratio);
    let (mut lo, mut w_lo, mut w_hi) = (0.0, top, bottom);
    if top.ratio <= goal {
        hi = 0.0;
        w_hi = top;
    }
    // Invariant: r(lo) > goal ≥ r(hi) (or hi = 0).
    while hi > 0.0 && hi - lo > 1e-9 * hi.max(1.0) {
        let mid = 0.5 * (lo + hi);
        let w = at(mid);
        if w.ratio <= goal {
            hi = mid;
            w_hi = w;
        } else {
            lo = mid;
            w_lo = w;
        }
    }
    if (w_hi.ratio - target).abs() > SIZING_TOLERANCE * target {
        return Err(SizingError::Gap {
            target,
            upper: w_lo.ratio,
            lower: w_hi.ratio,
            at_up_buffer: hi,
        });
    }
    let sized = Params {
        up_buffer: hi,
        ..*p
    };
    check_windows(&sized, &w_hi).map_err(SizingError::Invalid)?;
    Ok(Sizing {
        up_buffer: hi,
        windows: w_hi,
        flat_up_to: (hi <= flat_up_to).then_some(flat_up_to),
    })
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

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn sizing_inverts_eq6_to_10_and_matches_eq11_where_no_limit_binds() {
        for &(bd, bu, rtt) in &[
            (30_000.0, 15_000.0, 0.2),
            (120_000.0, 6_000.0, 0.04),
            (60_000.0, 45_000.0, 0.2),
        ] {
            for delayed_ack in [true, false] {
                let p = Params {
                    delayed_ack,
                    ..Params::adsl(rtt, bd, bu)
                };
                let w = p.solve();
                // Neither B_TCP nor the B* clamp binds, so Eq. 11 is exact here.
                assert!(!w.down_at_tcp_buffer && !w.up_at_tcp_buffer);
                assert!(bu > p.rho_eff() * w.cwnd_down && bd > p.rho_eff() * w.cwnd_up);
                let sz = p.size_up_buffer(w.ratio).unwrap();
                assert!((sz.up_buffer - bu).abs() < 1e-3, "{} vs {bu}", sz.up_buffer);
                assert!(close(sz.windows.ratio, w.ratio, SIZING_TOLERANCE));
                assert_eq!(sz.flat_up_to, None);
                let closed = p.up_buffer_for_ratio(w.ratio).unwrap();
                assert!(
                    (sz.up_buffer - closed).abs() < 1e-3,
                    "{} vs {closed}",
                    sz.up_buffer
                );
            }
        }
    }

    #[test]
    fn sizing_refuses_targets_eq6_to_10_cannot_reach() {
        // The audit's case: 2.4 Mbit/s / 196 kbit/s, RTT 200 ms, B_d = 60 kB.
        let p = Params::adsl(0.2, 60_000.0, 0.0);
        let top = p.solve();
        // With an empty uplink buffer the download's ACKs already fill it.
        assert_eq!(top.b_star_up, 0.0);
        for target in [30.0, 35.0] {
            // Eq. 11's closed form has an answer, but Eq. 6-10 with that
            // buffer give a ratio far from the target (the defect).
            let closed = p.up_buffer_for_ratio(target).unwrap();
            let forward = Params {
                up_buffer: closed,
                ..p
            }
            .solve()
            .ratio;
            assert!(forward < 0.9 * target, "{forward} vs {target}");
            let e = p.size_up_buffer(target).unwrap_err();
            let SizingError::TooHigh {
                max_ratio,
                flat_up_to,
                ..
            } = e
            else {
                panic!("{e:?}")
            };
            assert_eq!(max_ratio, top.ratio);
            assert!(max_ratio < target);
            // Every buffer up to flat_up_to gives the maximum; more gives less.
            let r = |bu: f64| Params { up_buffer: bu, ..p }.solve().ratio;
            assert!(close(r(0.99 * flat_up_to), max_ratio, 1e-9));
            assert!(r(1.01 * flat_up_to) < max_ratio * (1.0 - SIZING_TOLERANCE));
            let msg = e.to_string();
            assert!(msg.contains("unreachable"), "{msg}");
            assert!(
                msg.contains(&format!("largest ratio is r = {}", sig(max_ratio))),
                "{msg}"
            );
        }
        // The maximum as printed in that error is a reachable target, and
        // so is anything within the tolerance above it.
        let printed: f64 = sig(top.ratio).parse().unwrap();
        for target in [printed, top.ratio * (1.0 + 0.5 * SIZING_TOLERANCE)] {
            let sz = p.size_up_buffer(target).unwrap();
            assert_eq!(sz.up_buffer, 0.0);
            assert_eq!(sz.windows, top);
            assert!(sz.flat_up_to.is_some());
        }
        // Just below it, the buffer leaves the flat region.
        let target = 0.99 * top.ratio;
        let sz = p.size_up_buffer(target).unwrap();
        assert!(
            sz.up_buffer > p.rho_eff() * top.cwnd_down,
            "{}",
            sz.up_buffer
        );
        assert_eq!(sz.flat_up_to, None);
        assert!(close(sz.windows.ratio, target, SIZING_TOLERANCE));
    }

    #[test]
    fn sized_buffers_solve_forward_to_their_targets() {
        for delayed_ack in [true, false] {
            for &(rtt, bd) in &[
                (0.04, 30_000.0),
                (0.2, 60_000.0),
                (0.2, 120_000.0),
                (0.0, 30_000.0),
            ] {
                let p = Params {
                    delayed_ack,
                    ..Params::adsl(rtt, bd, 0.0)
                };
                let max = p.solve().ratio.min(1e3);
                let mut prev = f64::INFINITY;
                for i in 1..=40 {
                    let target = max * i as f64 / 40.0;
                    let sz = p
                        .size_up_buffer(target)
                        .unwrap_or_else(|e| panic!("rtt {rtt} bd {bd} r {target}: {e}"));
                    let forward = Params {
                        up_buffer: sz.up_buffer,
                        ..p
                    }
                    .solve()
                    .ratio;
                    assert!(
                        close(forward, target, SIZING_TOLERANCE),
                        "{forward} vs {target}"
                    );
                    // r falls as B_u grows, so larger targets need smaller buffers.
                    assert!(sz.up_buffer <= prev, "{} after {prev}", sz.up_buffer);
                    prev = sz.up_buffer;
                }
            }
        }
    }

    #[test]
    fn sizing_reports_the_b_tcp_jump_and_floor() {
        // B_TCP just under B_d + P_d = 120 kB: the download's window drops
        // from B_TCP to 3/4 of it once the upload's ACKs take 1 kB of the
        // downlink buffer, so r jumps by about 4/3.
        let p = Params {
            tcp_buffer: 119_000.0,
            ..Params::adsl(0.2, 60_000.0, 0.0)
        };
        let e = p.size_up_buffer(1.8).unwrap_err();
        let SizingError::Gap {
            upper,
            lower,
            at_up_buffer,
            ..
        } = e
        else {
            panic!("{e:?}")
        };
        assert!(upper > 1.8 && lower < 1.8, "{upper} {lower}");
        let at = |bu: f64| Params { up_buffer: bu, ..p }.solve();
        let (before, after) = (at(at_up_buffer - 1.0), at(at_up_buffer + 1.0));
        assert!(before.down_at_tcp_buffer && !after.down_at_tcp_buffer);
        assert!(close(before.ratio, upper, 1e-3) && close(after.ratio, lower, 1e-3));
        assert!(close(upper / lower, 4.0 / 3.0, 0.01), "{}", upper / lower);
        assert!(e.to_string().contains("jumps"), "{e}");
        // Targets on either side of the jump are met.
        for target in [2.2, 1.5] {
            let sz = p.size_up_buffer(target).unwrap();
            assert!(close(sz.windows.ratio, target, SIZING_TOLERANCE));
        }

        // B_TCP = 20 kB: from some B_u on both windows sit at B_TCP, r = 1.
        let p = Params {
            tcp_buffer: 20_000.0,
            ..Params::adsl(0.2, 60_000.0, 0.0)
        };
        let e = p.size_up_buffer(0.5).unwrap_err();
        let SizingError::TooLow {
            min_ratio,
            from_up_buffer,
            ..
        } = e
        else {
            panic!("{e:?}")
        };
        let at = |bu: f64| Params { up_buffer: bu, ..p }.solve();
        assert!(at(from_up_buffer + 1.0).up_at_tcp_buffer);
        assert!(!at(from_up_buffer - 1.0).up_at_tcp_buffer);
        assert_eq!(at(from_up_buffer + 1.0).ratio, min_ratio);
        assert_eq!(at(1e9).ratio, min_ratio);
        assert!(e.to_string().contains("smallest ratio"), "{e}");
        // Within the tolerance below the floor, the floor is the answer.
        let sz = p
            .size_up_buffer(min_ratio * (1.0 - 0.5 * SIZING_TOLERANCE))
            .unwrap();
        assert_eq!(sz.windows.ratio, min_ratio);
        assert!(
            (sz.up_buffer - from_up_buffer).abs() < 1.0,
            "{}",
            sz.up_buffer
        );
    }

    #[test]
    fn undefined_or_out_of_range_inputs_are_errors() {
        use Param::*;
        let ok = Params::adsl(0.2, 30_000.0, 15_000.0);
        assert_eq!(ok.solve_checked(), Ok(ok.solve()));
        // Zero RTT and empty buffers: gamma is 0/0 and the unchecked
        // solution has no windows at all.
        let p = Params {
            rtt: 0.0,
            down_buffer: 0.0,
            up_buffer: 0.0,
            ..ok
        };
        assert!(p.gamma().is_nan());
        assert_eq!(p.solve().cwnd_up, 0.0);
        assert_eq!(p.solve_checked(), Err(ParamError::NoRoom { up: false }));
        assert_eq!(
            p.size_up_buffer(2.0),
            Err(SizingError::Invalid(ParamError::NoRoom { up: false }))
        );
        let p = Params {
            down_buffer: 10_000.0,
            ..p
        };
        assert_eq!(p.solve_checked(), Err(ParamError::NoRoom { up: true }));
        // Zero RTT and an uplink buffer the download's ACKs fill.
        let p = Params {
            up_buffer: 100.0,
            ..p
        };
        assert_eq!(p.solve().cwnd_up, 0.0);
        match p.solve_checked() {
            Err(ParamError::AcksFillBuffer { up: true, acks }) => assert!(acks > 100.0, "{acks}"),
            other => panic!("{other:?}"),
        }
        // ... but a larger one is fine.
        let acks = p.rho_eff() * p.solve().cwnd_down;
        assert!(Params {
            up_buffer: 2.0 * acks,
            ..p
        }
        .solve_checked()
        .is_ok());
        for (q, param) in [
            (Params { rtt: 1e30, ..ok }, Rtt),
            (
                Params {
                    rtt: MAX_RTT * 1.001,
                    ..ok
                },
                Rtt,
            ),
            (Params { rtt: -0.1, ..ok }, Rtt),
            (
                Params {
                    down_rate: f64::NAN,
                    ..ok
                },
                DownRate,
            ),
            (Params { up_rate: 0.0, ..ok }, UpRate),
            (
                Params {
                    up_buffer: -1.0,
                    ..ok
                },
                UpBuffer,
            ),
            (
                Params {
                    down_buffer: f64::INFINITY,
                    ..ok
                },
                DownBuffer,
            ),
            (
                Params {
                    ack_size: 0.0,
                    ..ok
                },
                AckSize,
            ),
            (
                Params {
                    data_size: 52.0,
                    ..ok
                },
                DataSize,
            ),
            (
                Params {
                    tcp_buffer: 0.0,
                    ..ok
                },
                TcpBuffer,
            ),
        ] {
            match q.solve_checked() {
                Err(e @ ParamError::Bad { param: got, .. }) => {
                    assert_eq!(got, param, "{q:?}");
                    assert_eq!(e.params(), vec![param]);
                    assert!(e.to_string().starts_with(param.symbol()), "{e}");
                }
                other => panic!("{q:?}: {other:?}"),
            }
            // Sizing checks the same inputs, bar the uplink buffer it chooses.
            if param != UpBuffer {
                assert!(
                    matches!(
                        q.size_up_buffer(2.0),
                        Err(SizingError::Invalid(ParamError::Bad { param: got, .. })) if got == param
                    ),
                    "{q:?}"
                );
            }
        }
        assert!(Params { rtt: MAX_RTT, ..ok }.solve_checked().is_ok());
        assert!(Params { rtt: 1e30, ..ok }
            .solve_checked()
            .unwrap_err()
            .to_string()
            .contains("too large"));
    }

    #[test]
    fn sig_keeps_six_significant_digits() {
        assert_eq!(sig(24.476_849), "24.4768");
        assert_eq!(sig(0.012_345_678), "0.0123457");
        assert_eq!(sig(123_456.7), "123457");
        assert_eq!(sig(f64::INFINITY), "inf");
    }

    #[test]
    fn fixed_point_is_eq11_without_limits() {
        let p = Params::adsl(0.2, 30_000.0, 15_000.0);
        let w = p.solve();
        assert!((w.ratio - p.ratio()).abs() < 1e-9 * p.ratio());
        assert!(!w.down_at_tcp_buffer && !w.up_at_tcp_buffer);
    }
}
