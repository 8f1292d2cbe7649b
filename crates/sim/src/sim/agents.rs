//! Agents and their sockets: adding agents, running their callbacks, and
//! the TCP and UDP operations [`crate::Cx`] offers them.

use super::*;

impl Sim {
    /// Adds an agent on node `node`, started at `start`. Returns its id.
    pub fn add_agent(
        &mut self,
        node: &str,
        name: &str,
        start: Time,
        agent: Box<dyn Agent>,
    ) -> Result<u32, String> {
        let n = self
            .node_id(node)
            .ok_or_else(|| format!("agent `{name}`: unknown node `{node}`"))?;
        let id = self.agents.len() as u32;
        self.agents.push(AgentSlot {
            agent: Some(agent),
            name: name.to_string(),
            node: n,
            rng: Rng::for_component(self.seed, &format!("agent/{name}")),
        });
        self.schedule(start, Ev::AgentStart(id));
        Ok(id)
    }

    /// An agent, downcast to its concrete type (to read its results).
    pub fn agent<T: Agent>(&self, id: u32) -> Option<&T> {
        let a: &dyn Agent = self.agents.get(id as usize)?.agent.as_deref()?;
        (a as &dyn std::any::Any).downcast_ref::<T>()
    }

    /// Mutable access to an agent (e.g. to configure it between runs of `run_until`).
    pub fn agent_mut<T: Agent>(&mut self, id: u32) -> Option<&mut T> {
        let a: &mut dyn Agent = self.agents.get_mut(id as usize)?.agent.as_deref_mut()?;
        (a as &mut dyn std::any::Any).downcast_mut::<T>()
    }

    /// The name an agent was added with.
    pub fn agent_name(&self, id: u32) -> &str {
        &self.agents[id as usize].name
    }

    /// A node's id by name.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| NodeId(i as u32))
    }

    pub(crate) fn agent_node(&self, a: u32) -> NodeId {
        self.agents[a as usize].node
    }

    pub(crate) fn agent_rng(&mut self, a: u32) -> &mut Rng {
        &mut self.agents[a as usize].rng
    }

    /// Runs `f` on agent `a` with a context. The agent is out of its slot
    /// meanwhile, so a callback can never re-enter it.
    pub(super) fn with_agent(&mut self, a: u32, f: impl FnOnce(&mut dyn Agent, &mut Cx<'_>)) {
        let Some(mut ag) = self.agents[a as usize].agent.take() else {
            return;
        };
        f(
            &mut *ag,
            &mut Cx {
                sim: self,
                agent: a,
            },
        );
        self.agents[a as usize].agent = Some(ag);
    }

    /// Hands an agent socket's connection events to its agent.
    pub(super) fn agent_events(&mut self, e: u32, a: u32) {
        // A buffer kept between calls (a callback that ends up here again
        // finds it taken and uses a fresh one).
        let mut evs = std::mem::take(&mut self.sock_events);
        let ep = &mut self.endpoints[e as usize];
        if std::mem::take(&mut ep.accepted) {
            evs.push(SockEvent::Accepted);
        }
        if let Some(c) = ep.conn.as_mut() {
            while let Some(ev) = c.poll_event() {
                evs.push(match ev {
                    Event::Connected if !ep.initiator => continue,
                    Event::Connected => SockEvent::Connected,
                    Event::Readable => SockEvent::Readable,
                    Event::Writable => SockEvent::Writable,
                    Event::PeerClosed => SockEvent::PeerClosed,
                    Event::Closed => SockEvent::Closed,
                    Event::Reset => {
                        ep.reset = true;
                        SockEvent::Reset
                    }
                    Event::TimedOut => {
                        ep.timed_out = true;
                        SockEvent::TimedOut
                    }
                });
            }
        }
        for ev in evs.drain(..) {
            self.with_agent(a, |ag, cx| ag.tcp_event(cx, e, ev));
        }
        self.sock_events = evs;
    }

    pub(crate) fn listen(
        &mut self,
        a: u32,
        port: u16,
        tcp: TcpConfig,
        cc: CcConfig,
    ) -> Result<(), String> {
        let node = self.agent_node(a);
        if self.listeners.contains_key(&(node, port)) {
            return Err(format!(
                "TCP port {port} on `{}` is already in use",
                self.nodes[node.index()].name
            ));
        }
        self.listeners.insert((node, port), (a, tcp, cc));
        Ok(())
    }

    /// Stops accepting connections to `port` if agent `a` listens there;
    /// connections accepted before stay open.
    pub(crate) fn unlisten(&mut self, a: u32, port: u16) {
        let key = (self.agent_node(a), port);
        if self.listeners.get(&key).is_some_and(|l| l.0 == a) {
            self.listeners.remove(&key);
        }
    }

    pub(crate) fn agent_connect(
        &mut self,
        a: u32,
        to: NodeId,
        port: u16,
        tcp: TcpConfig,
        cc: &CcConfig,
    ) -> Result<u32, String> {
        let node = self.agent_node(a);
        let Some((listener, ltcp, lcc)) = self.listeners.get(&(to, port)).cloned() else {
            return Err(format!(
                "nothing listens on TCP port {port} of `{}`",
                self.nodes.get(to.index()).map_or("?", |n| &n.name)
            ));
        };
        if self.routing.next_iface(node, to).is_none() {
            return Err(format!(
                "no route from `{}` to `{}`",
                self.nodes[node.index()].name,
                self.nodes[to.index()].name
            ));
        }
        let local_port = {
            let p = &mut self.next_port[node.index()];
            *p = p.checked_add(1).unwrap_or(40_000);
            *p
        };
        let e0 = self.endpoints.len() as u32;
        let interval = self.goodput_interval;
        for (initiator, n, peer_node, owner, accept) in [
            (true, node, to, a, None),
            (
                false,
                to,
                node,
                listener,
                Some(Box::new((ltcp.clone(), lcc.clone()))),
            ),
        ] {
            self.endpoints.push(Endpoint {
                agent: Some(owner),
                accept,
                ..Endpoint::idle(
                    n,
                    peer_node,
                    if initiator { e0 + 1 } else { e0 },
                    initiator,
                    interval,
                )
            });
        }
        let iss = self.agents[a as usize].rng.next_u64() as u32;
        self.endpoints[e0 as usize].conn = Some(Box::new(Connection::connect(
            tcp, cc, local_port, port, iss,
        )));
        self.flush(e0);
        Ok(e0)
    }

    pub(crate) fn sock_send(&mut self, e: u32, data: Bytes) -> usize {
        let Some(c) = self
            .endpoints
            .get_mut(e as usize)
            .and_then(|ep| ep.conn.as_mut())
        else {
            return 0;
        };
        let n = c.send(data);
        self.flush(e);
        n
    }

    pub(crate) fn sock_recv(&mut self, e: u32, max: usize) -> Option<Bytes> {
        let now = self.now;
        let warmup = self.warmup;
        let ep = self.endpoints.get_mut(e as usize)?;
        let b = ep.conn.as_mut()?.recv(max)?;
        let n = b.len() as u64;
        ep.received += n;
        ep.goodput.add(now, n);
        ep.last_delivery = Some(now);
        if now >= warmup {
            ep.received_after_warmup += n;
        }
        // Reading may open the window: a window update may be due.
        self.flush(e);
        Some(b)
    }

    pub(crate) fn sock_close(&mut self, e: u32, abort: bool) {
        if let Some(c) = self
            .endpoints
            .get_mut(e as usize)
            .and_then(|ep| ep.conn.as_mut())
        {
            if abort {
                c.abort();
            } else {
                c.close();
            }
            self.flush(e);
        }
    }

    pub(crate) fn bind_udp(&mut self, a: u32, port: u16) -> Result<(), String> {
        let node = self.agent_node(a);
        if self.udp_ports.contains_key(&(node, port)) {
            return Err(format!(
                "UDP port {port} on `{}` is already in use",
                self.nodes[node.index()].name
            ));
        }
        self.udp_ports.insert((node, port), a);
        Ok(())
    }

    pub(crate) fn send_udp(
        &mut self,
        node: NodeId,
        src_port: u16,
        to: NodeId,
        dst_port: u16,
        data: Bytes,
    ) {
        // A datagram to the sender's own node has no route and is dropped:
        // delivering it at once would run one agent inside another's callback.
        self.send(node, Packet::udp(node, to, src_port, dst_port, data));
    }

    pub(crate) fn set_agent_timer(&mut self, a: u32, at: Time, token: u64) {
        let at = at.max(self.now);
        self.schedule(at, Ev::AgentTimer(a, token));
    }

    /// The controller name of an endpoint's connection.
    pub fn cc_name(&self, e: u32) -> &'static str {
        match &self.endpoints[e as usize].conn {
            Some(c) => c.controller_ref().name(),
            None => self.flows[self.endpoints[e as usize].flow as usize]
                .cc
                .name(),
        }
    }

    /// A quick look at a connection's congestion state, for tests and tools.
    pub fn cwnd_of(&self, e: u32) -> Option<u64> {
        self.endpoints[e as usize]
            .conn
            .as_ref()
            .map(|c| c.controller_ref().cwnd())
    }
}
