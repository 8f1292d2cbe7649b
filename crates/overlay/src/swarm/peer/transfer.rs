//! Blocks: requesting and receiving them (piece picking, the end game)
//! and sending them on the data connections.

use super::*;

impl Peer {
    // ----- downloading -------------------------------------------------------

    /// Requests blocks from neighbour `i` until its pipeline is full.
    pub(super) fn fill(&mut self, cx: &mut Cx<'_>, i: usize) {
        loop {
            let Some(nb) = self.nbs[i].as_ref() else {
                return;
            };
            if nb.peer_choking || !nb.am_interested || nb.requested.len() >= self.cfg.pipeline {
                return;
            }
            let Some((p, b)) = self.pick(cx, i) else {
                return;
            };
            self.reqs[p as usize][b as usize] += 1;
            let nb = self.nbs[i].as_mut().expect("live");
            nb.requested.push((p, b));
            let m = self.request(p, b);
            self.send(cx, i, &m);
        }
    }

    /// The request for block `b` of piece `p`.
    pub(super) fn request(&self, p: u32, b: u32) -> Msg {
        let begin = b * BLOCK;
        Msg::Request {
            index: p,
            begin,
            len: BLOCK.min(self.cfg.piece_len - begin),
        }
    }

    /// The next block to request from neighbour `i`.
    pub(super) fn pick(&self, cx: &mut Cx<'_>, i: usize) -> Option<(u32, u32)> {
        let nb = self.nbs[i].as_ref()?;
        let n = self.cfg.pieces as usize;
        let free = |p: usize| {
            (0..self.blocks_per_piece)
                .find(|&b| !self.got[p][b as usize] && self.reqs[p][b as usize] == 0)
        };
        let wanted = |p: usize| nb.has[p] && !self.have[p];
        // Strict priority: pieces already started.
        for p in (0..n).filter(|&p| {
            wanted(p) && (self.got_count[p] > 0 || self.reqs[p].iter().any(|&r| r > 0))
        }) {
            if let Some(b) = free(p) {
                return Some((p as u32, b));
            }
        }
        // A new piece: random first, then rarest first, ties at random.
        let fresh: Vec<usize> = (0..n)
            .filter(|&p| {
                wanted(p) && self.got_count[p] == 0 && self.reqs[p].iter().all(|&r| r == 0)
            })
            .collect();
        if !fresh.is_empty() {
            let cands: Vec<usize> = if self.have_count < RANDOM_FIRST {
                fresh
            } else {
                let min = fresh
                    .iter()
                    .map(|&p| self.avail[p])
                    .min()
                    .expect("non-empty");
                fresh
                    .into_iter()
                    .filter(|&p| self.avail[p] == min)
                    .collect()
            };
            let p = cands[cx.rng().below(cands.len() as u64) as usize];
            return Some((p as u32, 0));
        }
        // End game, once every missing block is requested from someone:
        // ask this neighbour too for one that only one other neighbour
        // has been asked for,
        // one such "busy" block at a time per neighbour (as libtorrent
        // does; every duplicate the cancel comes too late for is waste).
        let unrequested = (0..n).any(|p| {
            !self.have[p]
                && (0..self.blocks_per_piece as usize)
                    .any(|b| !self.got[p][b] && self.reqs[p][b] == 0)
        });
        if unrequested
            || nb
                .requested
                .iter()
                .any(|&(p, b)| self.reqs[p as usize][b as usize] > 1)
        {
            return None;
        }
        for p in (0..n).filter(|&p| wanted(p)) {
            for b in 0..self.blocks_per_piece {
                if !self.got[p][b as usize]
                    && self.reqs[p][b as usize] < 2
                    && !nb.requested.contains(&(p as u32, b))
                {
                    return Some((p as u32, b));
                }
            }
        }
        None
    }

    pub(super) fn on_data_readable(&mut self, cx: &mut Cx<'_>, sock: Sock) {
        let mut events = Vec::new();
        let mut err = None;
        let Some(r) = self.data_readers.get_mut(&sock) else {
            return;
        };
        while let Some(b) = cx.recv(sock, 1 << 16) {
            if let Err(e) = r.push(&b, &mut events) {
                err = Some(e);
                break;
            }
        }
        for ev in events {
            match ev {
                // The handshake says whose data connection this is.
                Event::Handshake(h) => {
                    let node = node_of(&h);
                    let Some(i) = self
                        .nbs
                        .iter()
                        .position(|n| n.as_ref().is_some_and(|n| n.node == Some(node)))
                    else {
                        self.data_readers.remove(&sock);
                        cx.abort(sock);
                        return;
                    };
                    let nb = self.nbs[i].as_mut().expect("live");
                    let old = nb.data_in.replace(sock);
                    self.socks.insert(sock, (i, Kind::DataIn));
                    if let Some(old) = old {
                        self.socks.remove(&old);
                        self.data_readers.remove(&old);
                        cx.abort(old);
                        self.rerequest(cx, i);
                    }
                }
                Event::Msg(Msg::Piece { index, begin, len }) => {
                    if let Some(&(i, _)) = self.socks.get(&sock) {
                        self.on_block(cx, i, index, begin, len);
                    }
                }
                // Data readers report lengths only (no `keep_blocks`).
                Event::Msg(_) | Event::Block { .. } => {}
            }
        }
        if let Some(e) = err {
            self.stats.errors.push(format!("data connection: {e}"));
            self.data_readers.remove(&sock);
            cx.abort(sock);
            if let Some((i, _)) = self.socks.remove(&sock) {
                self.data_in_lost(cx, i);
            }
        }
    }

    pub(super) fn on_block(&mut self, cx: &mut Cx<'_>, i: usize, index: u32, begin: u32, len: u32) {
        let (p, b) = (index as usize, (begin / BLOCK) as usize);
        if p >= self.got.len() || b >= self.got[p].len() {
            self.stats.errors.push(format!(
                "piece message for piece {p}, block {b}: out of range"
            ));
            return;
        }
        self.stats.downloaded += len as u64;
        if let Some(nb) = self.nbs[i].as_mut() {
            nb.down[0] += len as u64;
            if let Some(k) = nb.requested.iter().position(|&r| r == (index, b as u32)) {
                nb.requested.swap_remove(k);
                self.reqs[p][b] -= 1;
            }
        }
        if self.got[p][b] {
            self.stats.duplicate_blocks += 1;
            self.fill(cx, i);
            return;
        }
        self.got[p][b] = true;
        self.got_count[p] += 1;
        // End game: cancel the same block at other neighbours.
        if self.reqs[p][b] > 0 {
            for j in 0..self.nbs.len() {
                let Some(nb) = self.nbs[j].as_mut() else {
                    continue;
                };
                if let Some(k) = nb.requested.iter().position(|&r| r == (index, b as u32)) {
                    nb.requested.swap_remove(k);
                    self.reqs[p][b] -= 1;
                    self.send(cx, j, &Msg::Cancel { index, begin, len });
                }
            }
        }
        if self.got_count[p] == self.blocks_per_piece {
            self.have[p] = true;
            self.have_count += 1;
            for j in 0..self.nbs.len() {
                if self.nbs[j].is_some() {
                    self.send(cx, j, &Msg::Have(index));
                }
            }
            if self.complete() {
                self.on_complete(cx);
            }
            for j in 0..self.nbs.len() {
                self.update_interest(cx, j);
            }
        }
        self.fill(cx, i);
    }

    pub(super) fn on_complete(&mut self, cx: &mut Cx<'_>) {
        let now = cx.now();
        self.stats.completed = Some(now);
        let took = now - self.stats.joined.unwrap_or(now);
        let stay = match self.cfg.stay {
            Stay::Forever => return,
            Stay::Leave => Dur::ZERO,
            Stay::Random { frac } => Dur::from_secs_f64(cx.rng().exp(frac * took.as_secs_f64())),
        };
        cx.set_timer(now + stay, LEAVE);
    }

    /// Neighbour `i`'s data connection to us failed: blocks in flight on it
    /// are lost, so ask again for every outstanding request (the uploader
    /// keeps the ones it still has queued in place).
    pub(super) fn data_in_lost(&mut self, cx: &mut Cx<'_>, i: usize) {
        if let Some(nb) = self.nbs[i].as_mut() {
            nb.data_in = None;
            self.rerequest(cx, i);
        }
    }

    pub(super) fn rerequest(&mut self, cx: &mut Cx<'_>, i: usize) {
        let Some(nb) = self.nbs[i].as_ref() else {
            return;
        };
        for (p, b) in nb.requested.clone() {
            let m = self.request(p, b);
            self.send(cx, i, &m);
        }
    }

    // ----- uploading ---------------------------------------------------------

    pub(super) fn pump_upload(&mut self, cx: &mut Cx<'_>, i: usize) {
        let Some(nb) = self.nbs[i].as_mut() else {
            return;
        };
        if nb.data_out.is_none() {
            if nb.queue.is_empty() {
                return;
            }
            let Some(node) = nb.node else { return };
            match cx.connect(
                node,
                DATA_PORT,
                self.cfg.data_tcp.clone(),
                &self.cfg.data_cc,
            ) {
                Ok(s) => {
                    nb.data_out = Some(s);
                    nb.data_ready = false;
                    nb.writing = Some((Self::handshake(cx), 0));
                    self.socks.insert(s, (i, Kind::DataOut));
                }
                // It stopped listening: it left, and its control
                // connection's reset may still be on the way.
                Err(_) => {
                    self.stats.refused += 1;
                    self.drop_nb(cx, i);
                }
            }
            return;
        }
        if !nb.data_ready {
            return;
        }
        let s = nb.data_out.expect("open");
        loop {
            if nb.writing.is_none() {
                let Some((index, begin, len)) = nb.queue.pop_front() else {
                    return;
                };
                let mut h = Vec::with_capacity(13);
                Msg::Piece { index, begin, len }.encode(&mut h);
                nb.writing = Some((h.into(), len));
            }
            let (hdr, left) = nb.writing.as_mut().expect("set");
            if !hdr.is_empty() {
                let n = cx.send(s, hdr.clone());
                let _ = hdr.split_to(n);
                if !hdr.is_empty() {
                    return;
                }
            }
            while *left > 0 {
                let n = cx.send(s, Bytes::from_static(&ZEROS[..*left as usize]));
                *left -= n as u32;
                nb.up[0] += n as u64;
                self.stats.uploaded += n as u64;
                if n == 0 {
                    return;
                }
            }
            nb.writing = None;
        }
    }
}
