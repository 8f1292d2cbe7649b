//! Agents: applications that run on hosts and use the network through a
//! socket-like context.
//!
//! The built-in flows of a scenario (bulk, fixed-size, bidirectional) cover
//! most experiments. When an experiment needs an application with logic of its
//! own (an overlay node that opens a second connection when traffic turns
//! bidirectional, a Tor relay that moves cells between connections, a BackTap
//! relay exchanging UDP datagrams), it implements [`Agent`] and is added with
//! [`crate::Sim::add_agent`].
//!
//! Callbacks receive a [`Cx`], through which the agent reads the clock, opens
//! and accepts TCP connections, reads and writes them, sends UDP datagrams and
//! sets timers. Output produced inside a callback is put on the wire before the
//! callback's caller continues; callbacks never run inside one another.

use crate::packet::NodeId;
use crate::sim::Sim;
use bytes::Bytes;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::rng::Rng;
use hopwise_proto::tcp::{Connection, TcpConfig};
use hopwise_proto::time::Time;

/// A TCP endpoint handle: the endpoint's index in the simulation.
pub type Sock = u32;

/// What happened on one of an agent's TCP connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockEvent {
    /// A connection to a port this agent listens on was accepted.
    Accepted,
    /// An outgoing connection completed its handshake.
    Connected,
    /// In-order data can be read.
    Readable,
    /// Send-buffer space became available after a refused write.
    Writable,
    /// The peer sent FIN.
    PeerClosed,
    /// The connection closed normally.
    Closed,
    /// The peer reset the connection.
    Reset,
    /// The handshake or the retransmissions gave up.
    TimedOut,
}

/// An application running on a host. Every method has a default that does
/// nothing, except [`Agent::start`].
pub trait Agent: std::any::Any {
    /// Called once, at the agent's start time.
    fn start(&mut self, cx: &mut Cx<'_>);
    /// A TCP connection of this agent changed state or has data.
    fn tcp_event(&mut self, _cx: &mut Cx<'_>, _sock: Sock, _ev: SockEvent) {}
    /// A UDP datagram arrived on a port this agent bound.
    fn datagram(
        &mut self,
        _cx: &mut Cx<'_>,
        _from: NodeId,
        _src_port: u16,
        _dst_port: u16,
        _data: Bytes,
    ) {
    }
    /// A timer set with [`Cx::set_timer`] fired.
    fn timer(&mut self, _cx: &mut Cx<'_>, _token: u64) {}
}

/// The agent's view of the simulation during a callback.
pub struct Cx<'a> {
    pub(crate) sim: &'a mut Sim,
    pub(crate) agent: u32,
}

impl Cx<'_> {
    /// The current simulated time.
    pub fn now(&self) -> Time {
        self.sim.now()
    }
    /// The node the agent runs on.
    pub fn node(&self) -> NodeId {
        self.sim.agent_node(self.agent)
    }
    /// This agent's id.
    pub fn id(&self) -> u32 {
        self.agent
    }
    /// The agent's own random stream (seeded from the scenario seed and the agent's name).
    pub fn rng(&mut self) -> &mut Rng {
        self.sim.agent_rng(self.agent)
    }
    /// A node's id by name.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.sim.node_id(name)
    }

    /// Accepts TCP connections to `port` on this node with the given
    /// configuration; each arrives as [`SockEvent::Accepted`].
    pub fn listen(&mut self, port: u16, tcp: TcpConfig, cc: CcConfig) -> Result<(), String> {
        self.sim.listen(self.agent, port, tcp, cc)
    }

    /// Stops listening on `port` (if this agent listens there): later
    /// connections to it are refused; accepted ones stay open.
    pub fn unlisten(&mut self, port: u16) {
        self.sim.unlisten(self.agent, port)
    }

    /// Opens a TCP connection to `port` on node `to`, where some agent must be
    /// listening already. [`SockEvent::Connected`] follows the handshake.
    pub fn connect(
        &mut self,
        to: NodeId,
        port: u16,
        tcp: TcpConfig,
        cc: &CcConfig,
    ) -> Result<Sock, String> {
        self.sim.agent_connect(self.agent, to, port, tcp, cc)
    }

    /// Writes data; returns how many bytes the send buffer accepted.
    pub fn send(&mut self, sock: Sock, data: Bytes) -> usize {
        self.sim.sock_send(sock, data)
    }
    /// Reads up to `max` in-order bytes.
    pub fn recv(&mut self, sock: Sock, max: usize) -> Option<Bytes> {
        self.sim.sock_recv(sock, max)
    }
    /// Graceful close (FIN after queued data).
    pub fn close(&mut self, sock: Sock) {
        self.sim.sock_close(sock, false)
    }
    /// Abortive close (RST).
    pub fn abort(&mut self, sock: Sock) {
        self.sim.sock_close(sock, true)
    }
    /// The connection behind a socket, for its state, window and statistics.
    pub fn conn(&self, sock: Sock) -> Option<&Connection> {
        self.sim.endpoints.get(sock as usize)?.conn.as_deref()
    }
    /// Samples this socket's cwnd/ssthresh/SRTT/in-flight at every trace
    /// tick, and records its connection's latency (both ends'
    /// [`crate::sim::Endpoint::rtt`] and [`crate::sim::Endpoint::queue_delay`]).
    pub fn trace(&mut self, sock: Sock) {
        if let Some(ep) = self.sim.endpoints.get_mut(sock as usize) {
            ep.sender = true;
        }
    }

    /// Receives UDP datagrams sent to `port` on this node.
    pub fn bind_udp(&mut self, port: u16) -> Result<(), String> {
        self.sim.bind_udp(self.agent, port)
    }
    /// Sends a UDP datagram (IPv4 + UDP headers add 28 B on the wire).
    /// Datagrams to the agent's own node are dropped (no loopback).
    pub fn send_udp(&mut self, src_port: u16, to: NodeId, dst_port: u16, data: Bytes) {
        let node = self.node();
        self.sim.send_udp(node, src_port, to, dst_port, data)
    }

    /// Calls [`Agent::timer`] with `token` at `at` (or now, if `at` has passed).
    pub fn set_timer(&mut self, at: Time, token: u64) {
        self.sim.set_agent_timer(self.agent, at, token)
    }
}
