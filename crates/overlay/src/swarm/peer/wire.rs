//! The control connection: messages, interest and choking.

use super::*;

impl Peer {
    // ----- control messages ------------------------------------------------

    /// Sends a message to neighbour `i`, once handshakes have been
    /// exchanged (before that, the bitfield sent with our handshake reply
    /// covers what we would have said).
    pub(super) fn send(&mut self, cx: &mut Cx<'_>, i: usize, m: &Msg) {
        let Some(nb) = self.nbs[i].as_mut().filter(|nb| nb.node.is_some()) else {
            return;
        };
        let mut v = Vec::with_capacity(m.wire_len());
        m.encode(&mut v);
        nb.out.extend(v);
        Self::flush(cx, nb);
    }

    pub(super) fn flush(cx: &mut Cx<'_>, nb: &mut Nb) {
        while !nb.out.is_empty() {
            let chunk = Bytes::copy_from_slice(nb.out.as_slices().0);
            let n = cx.send(nb.ctrl, chunk.clone());
            nb.out.drain(..n);
            if n < chunk.len() {
                return;
            }
        }
    }

    pub(super) fn on_ctrl_readable(&mut self, cx: &mut Cx<'_>, i: usize) {
        let mut events = Vec::new();
        loop {
            let Some(nb) = self.nbs[i].as_mut() else {
                return;
            };
            let Some(b) = cx.recv(nb.ctrl, 1 << 16) else {
                break;
            };
            if let Err(e) = nb.reader.push(&b, &mut events) {
                self.stats.errors.push(format!("control connection: {e}"));
                self.drop_nb(cx, i);
                return;
            }
        }
        for ev in events {
            if self.nbs[i].is_none() {
                return;
            }
            match ev {
                Event::Handshake(h) => self.on_handshake(cx, i, h),
                Event::Msg(m) => self.on_msg(cx, i, m),
                // Control readers report lengths only (no `keep_blocks`).
                Event::Block { .. } => {}
            }
        }
    }

    pub(super) fn on_handshake(&mut self, cx: &mut Cx<'_>, i: usize, h: Handshake) {
        let node = node_of(&h);
        let me = cx.node();
        // Both ends opened a connection: keep the one the lower node opened.
        let dup = self
            .nbs
            .iter()
            .enumerate()
            .find(|(j, n)| *j != i && n.as_ref().is_some_and(|n| n.node == Some(node)))
            .map(|(j, _)| j);
        if let Some(j) = dup {
            let this_initiated = self.nbs[i].as_ref().expect("live").dialled.is_some();
            let keep_this = (me < node) == this_initiated;
            self.drop_nb(cx, if keep_this { j } else { i });
            if !keep_this {
                return;
            }
        }
        let nb = self.nbs[i].as_mut().expect("live");
        nb.node = Some(node);
        if nb.dialled.is_none() {
            let hs = Self::handshake(cx);
            nb.out.extend(hs.iter());
            Self::flush(cx, nb);
        }
        if self.have_count > 0 {
            let have = &self.have;
            let f = bt::bitfield(have.len(), |p| have[p]);
            self.send(cx, i, &Msg::Bitfield(f));
        }
    }

    pub(super) fn on_msg(&mut self, cx: &mut Cx<'_>, i: usize, m: Msg) {
        let n = self.cfg.pieces as usize;
        match m {
            // The simulated peers send none of BEP 6's have all / have none
            // and no message the codec skips.
            Msg::KeepAlive
            | Msg::Piece { .. }
            | Msg::HaveAll
            | Msg::HaveNone
            | Msg::Unknown { .. } => {}
            Msg::Choke => {
                // Requests it will not serve come back as rejects (BEP 6);
                // the others were written before the choke and will arrive.
                self.nbs[i].as_mut().expect("live").peer_choking = true;
            }
            Msg::Reject { index, begin, .. } => {
                let nb = self.nbs[i].as_mut().expect("live");
                let r = (index, begin / BLOCK);
                if let Some(k) = nb.requested.iter().position(|&x| x == r) {
                    nb.requested.swap_remove(k);
                    self.reqs[r.0 as usize][r.1 as usize] -= 1;
                }
                self.fill_all(cx);
            }
            Msg::Unchoke => {
                self.nbs[i].as_mut().expect("live").peer_choking = false;
                self.fill(cx, i);
            }
            Msg::Interested => {
                self.nbs[i].as_mut().expect("live").peer_interested = true;
                // A free slot is given at once rather than at the next round.
                let open = self.nbs.iter().flatten().filter(|n| !n.am_choking).count();
                if open < self.cfg.slots + 1 {
                    self.set_choke(cx, i, false);
                }
            }
            Msg::NotInterested => {
                let nb = self.nbs[i].as_mut().expect("live");
                nb.peer_interested = false;
            }
            Msg::Have(p) => {
                let p = p as usize;
                if p >= n {
                    self.stats
                        .errors
                        .push(format!("have: piece {p} out of range (0..{n})"));
                    self.drop_nb(cx, i);
                    return;
                }
                let nb = self.nbs[i].as_mut().expect("live");
                if !nb.has[p] {
                    nb.has[p] = true;
                    nb.has_count += 1;
                    self.avail[p] += 1;
                }
                self.update_interest(cx, i);
            }
            Msg::Bitfield(f) => {
                if f.len() != n.div_ceil(8) {
                    self.stats.errors.push(format!(
                        "bitfield: {} B for {n} pieces (expected {})",
                        f.len(),
                        n.div_ceil(8)
                    ));
                    self.drop_nb(cx, i);
                    return;
                }
                let nb = self.nbs[i].as_mut().expect("live");
                for p in 0..n {
                    if bt::bit(&f, p) && !nb.has[p] {
                        nb.has[p] = true;
                        nb.has_count += 1;
                        self.avail[p] += 1;
                    }
                }
                self.update_interest(cx, i);
            }
            Msg::Request { index, begin, len } => {
                let plen = self.cfg.piece_len;
                let nb = self.nbs[i].as_mut().expect("live");
                let ok = (index as usize) < n
                    && self.have[index as usize]
                    && len <= BLOCK
                    && begin.checked_add(len).is_some_and(|e| e <= plen);
                if nb.am_choking || !ok {
                    self.send(cx, i, &Msg::Reject { index, begin, len });
                    return;
                }
                // A repeat (sent again after a data connection failed) keeps
                // its place.
                if !nb.queue.contains(&(index, begin, len)) {
                    nb.queue.push_back((index, begin, len));
                }
                self.pump_upload(cx, i);
            }
            Msg::Cancel { index, begin, len } => {
                let nb = self.nbs[i].as_mut().expect("live");
                nb.queue.retain(|&r| r != (index, begin, len));
            }
        }
    }

    pub(super) fn update_interest(&mut self, cx: &mut Cx<'_>, i: usize) {
        let Some(nb) = self.nbs[i].as_ref() else {
            return;
        };
        let want = nb
            .has
            .iter()
            .zip(&self.have)
            .any(|(&they, &we)| they && !we);
        if want != nb.am_interested {
            self.nbs[i].as_mut().expect("live").am_interested = want;
            let m = if want {
                Msg::Interested
            } else {
                Msg::NotInterested
            };
            self.send(cx, i, &m);
        }
        if want {
            self.fill(cx, i);
        }
    }

    pub(super) fn set_choke(&mut self, cx: &mut Cx<'_>, i: usize, choke: bool) {
        let Some(nb) = self.nbs[i].as_mut() else {
            return;
        };
        if nb.am_choking == choke {
            return;
        }
        nb.am_choking = choke;
        let rejected: Vec<(u32, u32, u32)> = if choke {
            nb.queue.drain(..).collect()
        } else {
            Vec::new()
        };
        self.send(cx, i, if choke { &Msg::Choke } else { &Msg::Unchoke });
        for (index, begin, len) in rejected {
            self.send(cx, i, &Msg::Reject { index, begin, len });
        }
    }

    // ----- choking -----------------------------------------------------------

    pub(super) fn rechoke(&mut self, cx: &mut Cx<'_>) {
        self.round += 1;
        let seed = self.complete();
        let mut cands: Vec<(u64, usize)> = Vec::new();
        for (i, nb) in self.nbs.iter().enumerate() {
            let Some(nb) = nb else { continue };
            if nb.peer_interested && nb.node.is_some() {
                let rate = if seed {
                    nb.up[0] + nb.up[1]
                } else {
                    nb.down[0] + nb.down[1]
                };
                cands.push((rate, i));
            }
        }
        // Random order first, so equal rates are broken at random.
        for k in (1..cands.len()).rev() {
            let j = cx.rng().below(k as u64 + 1) as usize;
            cands.swap(k, j);
        }
        cands.sort_by_key(|c| std::cmp::Reverse(c.0));
        let regular: Vec<usize> = cands.iter().take(self.cfg.slots).map(|c| c.1).collect();
        let rest: Vec<usize> = cands.iter().skip(self.cfg.slots).map(|c| c.1).collect();
        let keep = self
            .optimistic
            .filter(|o| rest.contains(o) && !self.round.is_multiple_of(OPTIMISTIC_ROUNDS));
        self.optimistic = keep.or_else(|| {
            (!rest.is_empty()).then(|| rest[cx.rng().below(rest.len() as u64) as usize])
        });
        for i in 0..self.nbs.len() {
            if self.nbs[i].is_none() {
                continue;
            }
            let unchoke = regular.contains(&i) || self.optimistic == Some(i);
            self.set_choke(cx, i, !unchoke);
        }
        for nb in self.nbs.iter_mut().flatten() {
            nb.down = [0, nb.down[0]];
            nb.up = [0, nb.up[0]];
        }
    }
}
