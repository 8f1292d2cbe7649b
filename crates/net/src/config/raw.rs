//! Relay, proxy and directory files as serde reads them: one struct per
//! table, unknown keys refused, each value a `hopwise_config` type that
//! words its own mistakes. `super` checks what they mean.

use hopwise_config::{
    table, Duration, Flag, Fraction, Int, Loss, Name, Rate, Size, Strings, TableOf, Tables, Text,
};
use std::collections::BTreeMap;

/// `[emulation.PEER]` sections by PEER.
type Emulations = BTreeMap<String, TableOf<RawEmulation>>;

table! {
    pub struct RawRelay("a table") {
        name: Name, listen: Text, key_file: Text, directory: Text, authority: Text,
        accept_clients: Flag,
        exit: TableOf<RawExit>, bandwidth: TableOf<RawBandwidth>, limits: TableOf<RawLimits>,
        metrics: TableOf<RawMetrics>, link: TableOf<RawLink>, transport: TableOf<RawTransport>,
        emulation: Emulations, log_level: Text,
    }
}
table! {
    pub struct RawProxy("a table") {
        socks: Text, listen: Text, directory: Text, authority: Text, path: Strings, key_file: Text,
        connect_timeout: Duration, socks_max_connections: Int<1, 1_000_000>,
        socks_handshake_timeout: Duration, limits: TableOf<RawLimits>, link: TableOf<RawLink>,
        transport: TableOf<RawTransport>, emulation: Emulations, metrics: TableOf<RawMetrics>,
        path_subnet_rule: Flag, state_file: Text, log_level: Text,
    }
}
table! {
    pub struct RawExit("a table ([exit])") {
        enabled: Flag, policy: Strings, reject_private: Flag, default: Text,
        connect_timeout: Duration,
    }
}
table! {
    pub struct RawBandwidth("a table ([bandwidth])") { rate: Rate, burst: Size, refill: Text }
}
table! {
    pub struct RawLimits("a table ([limits])") {
        circuit_queue: Int<4, 1_000_000>, max_circuits: Int<1, 10_000_000>,
        max_circuits_per_client: Int<1, 10_000_000>, max_streams: Int<1, 65_535>,
        stream_window: Size, max_clients: Int<1, 10_000_000>,
        max_queued_cells: Int<1000, { 1 << 40 }>, max_stream_buffers: Size,
    }
}
table! {
    pub struct RawMetrics("a table ([metrics])") { listen: Text }
}
table! {
    pub struct RawLink("a table ([link])") {
        encrypt: Flag, payload_budget: Size, socket_buffer: Size, handshake_timeout: Duration,
        keepalive: Duration, idle_timeout: Duration, handshakes_per_second: Int<1, 1_000_000>,
    }
}
table! {
    pub struct RawTransport("a table ([transport])") {
        pack_delay: Duration, alpha: Int<1, 100_000>, beta: Int<1, 100_000>, startup: Text,
        max_window: Int<1, 1_000_000>, sack: Flag, loss_response: Text, loss_bound: Fraction,
    }
}
table! {
    pub struct RawEmulation("a table: [emulation.PEER] with delay, loss, rate, queue") {
        delay: Duration, loss: Loss, rate: Rate, queue: Size, seed: Int,
    }
}
table! {
    pub struct RawDirectory("a table") { relay: Tables<RawEntry>, directory: TableOf<RawHeader> }
}
table! {
    pub struct RawHeader("a table ([directory])") {
        valid_after: Text, valid_until: Text, signature: Text,
    }
}
table! {
    pub struct RawEntry("a table (a [[relay]] section)", section "relay") {
        name: Name, address: Text, key: Text, flags: Strings,
        bandwidth: Int<1, 100_000_000>, family: Name, exit_policy: Strings,
    }
}

/// Only the `key_file` of a relay file (other keys are not looked at).
#[derive(serde::Deserialize)]
pub struct RawKeyFile {
    pub key_file: Option<Text>,
}
