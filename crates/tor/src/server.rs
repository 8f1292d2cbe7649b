//! A server host: accepts the exit's TCP connections (one per stream), reads
//! a request, waits the response delay and writes the requested number of
//! bytes of the pattern, then closes.

use crate::cell::{decode_request, pattern_slice, REQUEST_LEN};
use crate::config::ResponseDelay;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::TcpConfig;
use hopwise_sim::{Agent, Cx, Sock, SockEvent};
use std::collections::BTreeMap;

#[derive(Debug, Default)]
struct Conn {
    req: Vec<u8>,
    /// Response bytes still to write (set when the delay ends) and the offset.
    left: Option<u64>,
    off: u64,
    size: u64,
    /// The request was read and the delay timer armed.
    armed: bool,
}

/// The server agent.
pub struct ServerAgent {
    seed: u64,
    port: u16,
    tcp: TcpConfig,
    cc: CcConfig,
    delay: ResponseDelay,
    conns: BTreeMap<Sock, Conn>,
    /// Requests answered and bytes written.
    pub requests: u64,
    pub bytes: u64,
}

impl ServerAgent {
    pub fn new(
        seed: u64,
        port: u16,
        tcp: TcpConfig,
        cc: CcConfig,
        delay: ResponseDelay,
    ) -> ServerAgent {
        ServerAgent {
            seed,
            port,
            tcp,
            cc,
            delay,
            conns: BTreeMap::new(),
            requests: 0,
            bytes: 0,
        }
    }

    fn pump(&mut self, cx: &mut Cx<'_>, sock: Sock) {
        let Some(c) = self.conns.get_mut(&sock) else {
            return;
        };
        let Some(left) = c.left.as_mut() else { return };
        while *left > 0 {
            let chunk = pattern_slice(c.off, (*left).min(1 << 16) as usize);
            let n = chunk.len();
            let took = cx.send(sock, chunk);
            c.off += took as u64;
            *left -= took as u64;
            self.bytes += took as u64;
            if took < n {
                return; // wait for Writable
            }
        }
        cx.close(sock);
        self.conns.remove(&sock);
    }
}

impl Agent for ServerAgent {
    fn start(&mut self, cx: &mut Cx<'_>) {
        cx.listen(self.port, self.tcp.clone(), self.cc.clone())
            .expect("one server per host");
    }

    fn tcp_event(&mut self, cx: &mut Cx<'_>, sock: Sock, ev: SockEvent) {
        match ev {
            SockEvent::Accepted => {
                self.conns.insert(sock, Conn::default());
            }
            SockEvent::Readable => {
                let Some(c) = self.conns.get_mut(&sock) else {
                    return;
                };
                while let Some(b) = cx.recv(sock, usize::MAX) {
                    if c.req.len() < REQUEST_LEN {
                        c.req.extend_from_slice(&b);
                    }
                }
                if !c.armed {
                    if let Some(q) = decode_request(&c.req) {
                        c.size = q.size;
                        c.armed = true;
                        let d = self.delay.draw(self.seed, q.circuit, q.index);
                        cx.set_timer(cx.now() + d, sock as u64);
                    }
                }
            }
            SockEvent::Writable => self.pump(cx, sock),
            SockEvent::PeerClosed | SockEvent::Reset | SockEvent::TimedOut
                if self.conns.get(&sock).is_some_and(|c| c.left.is_none()) =>
            {
                self.conns.remove(&sock);
                cx.close(sock);
            }
            _ => {}
        }
    }

    fn timer(&mut self, cx: &mut Cx<'_>, token: u64) {
        let sock = token as Sock;
        if let Some(c) = self.conns.get_mut(&sock) {
            c.left = Some(c.size);
            self.requests += 1;
            self.pump(cx, sock);
        }
    }
}
