//! The agent of a Tor node (onion proxy, relay, exit, or several of these at
//! once): an [`Edge`] layer and a [`Transport`], a cell pool, the relay's
//! token buckets, and the samplers.

use crate::buckets::{Buckets, Side};
use crate::cell::CellPool;
use crate::config::{BucketScope, TorConfig, TransportConfig};
use crate::edge::{Edge, EdgeResult};
use crate::plan::NodePlan;
use crate::results::{HopLosses, HopSample, NodeSample, TransportStats};
use crate::transport::{backtap, token, vanilla::VanillaTransport, Io, Shared, Transport};
use bytes::Bytes;
use hopwise_proto::time::Dur;
use hopwise_sim::{Agent, Cx, NodeId, Sock, SockEvent};

/// One Tor node.
pub struct TorNode {
    name: String,
    edge: Edge,
    tx: Box<dyn Transport>,
    pool: CellPool,
    buckets: Buckets,
    io: Io,
    bucket_spec: Option<crate::config::BucketSpec>,
    scope: BucketScope,
    rw_interval: Dur,
    queue_interval: Option<Dur>,
    /// Hops whose queues are sampled, and their samples.
    traced: Vec<u32>,
    hop_samples: Vec<Vec<HopSample>>,
    node_samples: Vec<NodeSample>,
}

impl TorNode {
    /// A node for `plan`. Fails if the transport is not available.
    pub(crate) fn new(cfg: &TorConfig, plan: &NodePlan) -> Result<TorNode, String> {
        let traced: Vec<u32> = if cfg.queue_interval.is_some() {
            (0..plan.hops.len() as u32)
                .filter(|&h| plan.hops[h as usize].trace)
                .collect()
        } else {
            Vec::new()
        };
        let (tx, scope): (Box<dyn Transport>, BucketScope) = match &cfg.transport {
            TransportConfig::Tcp(t) => (
                Box::new(VanillaTransport::new(t.clone(), plan, !traced.is_empty())),
                t.bucket_scope,
            ),
            TransportConfig::Backtap(b) => (
                backtap::transport(b, plan)?,
                // The endpoint applies the relay's bucket to the cells it
                // sends; the node's buckets then limit only reads from
                // server sockets at an exit.
                BucketScope::Read,
            ),
        };
        Ok(TorNode {
            name: plan.name.clone(),
            edge: Edge::new(cfg, plan),
            tx,
            pool: CellPool::default(),
            buckets: Buckets::default(),
            io: Io::default(),
            bucket_spec: plan.bucket,
            scope,
            rw_interval: cfg.rw_interval,
            queue_interval: cfg.queue_interval,
            hop_samples: vec![Vec::new(); traced.len()],
            traced,
            node_samples: Vec::new(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Moves cells until nothing more can happen at this instant.
    fn pump(&mut self, cx: &mut Cx<'_>) {
        let TorNode {
            edge,
            tx,
            pool,
            buckets,
            io,
            ..
        } = self;
        let mut sh = Shared { pool, buckets, io };
        loop {
            tx.poll_reads(cx, &mut sh);
            edge.process(cx, tx.as_mut(), &mut sh);
            tx.poll_writes(cx, &mut sh);
            if sh.io.delivered.is_empty() && sh.io.writable.is_empty() {
                break;
            }
        }
    }

    fn with_shared<R>(
        &mut self,
        f: impl FnOnce(&mut Edge, &mut dyn Transport, &mut Shared<'_>) -> R,
    ) -> R {
        let TorNode {
            edge,
            tx,
            pool,
            buckets,
            io,
            ..
        } = self;
        let mut sh = Shared { pool, buckets, io };
        f(edge, tx.as_mut(), &mut sh)
    }

    // ----- results --------------------------------------------------------

    pub(crate) fn edge_of(&self, hop: u32) -> Option<EdgeResult<'_>> {
        self.edge.end_of(hop)
    }

    pub(crate) fn hop_trace(&self, hop: u32) -> Option<&[HopSample]> {
        let i = self.traced.iter().position(|&h| h == hop)?;
        Some(&self.hop_samples[i])
    }

    pub(crate) fn node_samples(&self) -> &[NodeSample] {
        &self.node_samples
    }

    pub(crate) fn hop_losses(&self, hop: u32) -> Option<HopLosses> {
        self.tx.hop_losses(hop)
    }

    pub(crate) fn transport_stats(&self) -> TransportStats {
        let mut s = self.tx.stats();
        s.dropped += self.edge.dropped;
        s
    }

    pub(crate) fn bucket_used(&self) -> [u64; 2] {
        self.buckets.used
    }

    pub(crate) fn peak_cells(&self) -> u64 {
        self.pool.capacity() as u64
    }
}

impl Agent for TorNode {
    fn start(&mut self, cx: &mut Cx<'_>) {
        let draw = cx.rng().f64();
        self.buckets = Buckets::new(self.bucket_spec.as_ref(), self.scope, draw);
        self.tx.set_bucket_phase(self.buckets.phase());
        self.tx.start(cx);
        self.edge.start(cx);
        // Connect once every node has started (and listens): timers set now
        // run after the start events already queued for this instant.
        let now = cx.now();
        cx.set_timer(now, token::make(token::CONNECT, 0));
        if self.edge.has_trace() {
            cx.set_timer(now, token::make(token::SAMPLE_RW, 0));
        }
        if !self.traced.is_empty() {
            cx.set_timer(now, token::make(token::SAMPLE_QUEUES, 0));
        }
    }

    fn tcp_event(&mut self, cx: &mut Cx<'_>, sock: Sock, ev: SockEvent) {
        if self.edge.owns(sock) {
            self.with_shared(|edge, tx, sh| edge.sock_event(cx, tx, sh, sock, ev));
        } else {
            self.with_shared(|_, tx, sh| tx.tcp_event(cx, sock, ev, sh));
        }
        self.pump(cx);
    }

    fn datagram(&mut self, cx: &mut Cx<'_>, from: NodeId, _sp: u16, _dp: u16, data: Bytes) {
        self.with_shared(|_, tx, sh| tx.datagram(cx, from, data, sh));
        self.pump(cx);
    }

    fn timer(&mut self, cx: &mut Cx<'_>, t: u64) {
        let (kind, payload) = token::split(t);
        let now = cx.now();
        match kind {
            token::CONNECT => self.tx.connect(cx),
            token::BUCKET_READ if self.buckets.fired(Side::Read, now) => {
                self.tx.bucket_refilled(Side::Read);
                self.edge.bucket_refilled();
            }
            token::BUCKET_WRITE if self.buckets.fired(Side::Write, now) => {
                self.tx.bucket_refilled(Side::Write);
            }
            token::TRANSPORT => self.with_shared(|_, tx, sh| tx.timer(cx, payload, sh)),
            token::SAMPLE_RW => {
                self.edge.sample_rw();
                cx.set_timer(now + self.rw_interval, t);
            }
            token::SAMPLE_QUEUES => {
                for (i, &h) in self.traced.iter().enumerate() {
                    let mut s = self.tx.sample_hop(cx, h);
                    if let Some((d, v)) = self.edge.vegas(h) {
                        let c32 = |x: u64| x.min(u32::MAX as u64) as u32;
                        let i = d.index();
                        s.cwnd[i] = c32(v.cwnd());
                        s.inflight[i] = c32(v.inflight());
                    }
                    self.hop_samples[i].push(s);
                }
                let mut s = self.tx.sample_node(cx);
                s.pool_cells = self.pool.live() as u64;
                self.node_samples.push(s);
                if let Some(iv) = self.queue_interval {
                    cx.set_timer(now + iv, t);
                }
            }
            token::APP => self.with_shared(|edge, tx, sh| edge.app_due(cx, tx, sh, payload as u32)),
            token::RESPONSE => {
                self.with_shared(|edge, tx, sh| edge.response_due(cx, tx, sh, payload))
            }
            _ => {}
        }
        self.pump(cx);
    }
}
