//! A whole overlay node, sans-IO: secure [`Links`](crate::link::Links)
//! under a circuit [`Node`](crate::circuit::Node). Feature `link`.
//!
//! A driver (the `hopwise relay` / `hopwise proxy` daemon, or a test) owns
//! one UDP socket and does only this:
//!
//! ```text
//! datagram arrives   -> host.handle_datagram(now, from, bytes)
//! deadline passes    -> host.handle_timeout(now)
//! after either       -> while let Some((to, bytes)) = host.poll_transmit(now) { send }
//!                       while let Some(ev) = host.poll_event() { act on streams }
//!                       arm a timer for host.poll_timeout()
//! ```
//!
//! Stream data goes through [`Host::node`]'s stream calls.

use crate::circuit::{DestroyReason, Node, NodeEvent};
use crate::link::{CloseReason, LinkEvent, Links};
use crate::time::Time;
use std::net::SocketAddr;

/// Links and node of one overlay participant.
#[derive(Debug)]
pub struct Host {
    links: Links,
    node: Node,
    frame: Vec<u8>,
}

impl Host {
    /// `links` and `node` must agree on the directory (link ids).
    pub fn new(links: Links, node: Node) -> Host {
        Host {
            links,
            node,
            frame: Vec::with_capacity(2048),
        }
    }

    pub fn links(&self) -> &Links {
        &self.links
    }
    pub fn node(&self) -> &Node {
        &self.node
    }
    pub fn node_mut(&mut self) -> &mut Node {
        &mut self.node
    }

    fn sync(&mut self, now: Time) {
        while let Some(ev) = self.links.poll_event() {
            match ev {
                LinkEvent::Up {
                    link,
                    key,
                    replaced,
                } => {
                    if replaced {
                        self.node.link_down(now, link);
                    }
                    self.node.link_up(link, key);
                }
                LinkEvent::Down { link } => self.node.link_down(now, link),
                LinkEvent::Closed { link, reason } => {
                    let why = match reason {
                        CloseReason::Shutdown => DestroyReason::Shutdown,
                        CloseReason::Full | CloseReason::NoClients => DestroyReason::LinkRefused,
                        CloseReason::Other(_) => DestroyReason::LinkFailed,
                    };
                    self.node.link_down_because(now, link, why);
                }
            }
        }
    }

    /// A UDP datagram arrived.
    pub fn handle_datagram(&mut self, now: Time, from: SocketAddr, data: &[u8]) {
        let l = self.links.handle_datagram(now, from, data, &mut self.frame);
        self.sync(now);
        if let Some(l) = l {
            self.node.handle_frame(now, l, &self.frame);
        }
    }

    pub fn handle_timeout(&mut self, now: Time) {
        self.links.handle_timeout(now);
        self.sync(now);
        self.node.handle_timeout(now);
    }

    /// The next datagram to send. Call until `None`.
    pub fn poll_transmit(&mut self, now: Time) -> Option<(SocketAddr, Vec<u8>)> {
        loop {
            if let Some(d) = self.links.poll_transmit() {
                return Some(d);
            }
            let (l, f) = self.node.poll_frame(now)?;
            if let Some(d) = self.links.seal(now, l, &f) {
                return Some(d);
            }
        }
    }

    /// [`Host::poll_transmit`] that appends the datagram to `out` (a
    /// driver's send buffer) and returns where it goes: no allocation per
    /// sealed datagram. `out` is unchanged when `None` is returned.
    pub fn poll_transmit_into(&mut self, now: Time, out: &mut Vec<u8>) -> Option<SocketAddr> {
        loop {
            if let Some((to, d)) = self.links.poll_transmit() {
                out.extend_from_slice(&d);
                return Some(to);
            }
            let (l, f) = self.node.poll_frame(now)?;
            if let Some(to) = self.links.seal_into(now, l, &f, out) {
                return Some(to);
            }
        }
    }

    /// For a node that stops, once its circuits are torn down and their
    /// DESTROYs sent: closes every link with a CLOSE frame, so that the
    /// peers take their links down at once instead of after
    /// `idle_timeout`. Send what `poll_transmit` returns afterwards.
    pub fn close_links(&mut self, now: Time) {
        self.links.close_all(now, CloseReason::Shutdown);
        self.sync(now);
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        match (self.links.poll_timeout(), self.node.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn poll_event(&mut self) -> Option<NodeEvent> {
        self.node.poll_event()
    }
}
