//! Packet captures on link directions (see [`crate::pcap`]).

use super::*;

impl Sim {
    /// Captures every packet that starts transmission on link direction
    /// `iface` (`<link>:ab` or `<link>:ba`) into `w` as pcap (see
    /// [`crate::pcap`]), from now on. `label` names the capture in the
    /// summary (the CLI uses the file name). Replaces an earlier capture on
    /// the same direction.
    pub fn attach_capture(
        &mut self,
        iface: &str,
        label: &str,
        w: Box<dyn std::io::Write + Send>,
        snaplen: u32,
    ) -> Result<(), String> {
        let Some(f) = self.ifaces.iter_mut().find(|f| f.name == iface) else {
            let names: Vec<&str> = self.ifaces.iter().map(|f| f.name.as_str()).collect();
            return Err(format!(
                "no link direction `{iface}` to capture on (have: {})",
                names.join(", ")
            ));
        };
        let c = Capture::new(w, snaplen).map_err(|e| format!("capture `{label}`: {e}"))?;
        f.capture = Some((label.to_string(), Box::new(c)));
        Ok(())
    }

    /// Stops the capture on `iface` and flushes it: its packet and byte
    /// counts, or its first write error. It no longer appears in
    /// [`Sim::captures`].
    pub fn detach_capture(&mut self, iface: &str) -> Result<(u64, u64), String> {
        let f = self
            .ifaces
            .iter_mut()
            .find(|f| f.name == iface)
            .ok_or_else(|| format!("no link direction `{iface}`"))?;
        let (label, mut c) = f
            .capture
            .take()
            .ok_or_else(|| format!("no capture on `{iface}`"))?;
        c.finish()
            .map_err(|e| format!("capture `{label}` on {iface}: {e}"))?;
        Ok((c.packets, c.bytes))
    }

    /// Flushes every capture; the first write error, naming its capture.
    /// Counts stay readable through [`Sim::captures`].
    pub fn finish_captures(&mut self) -> Result<(), String> {
        let mut first = None;
        for f in &mut self.ifaces {
            if let Some((label, c)) = f.capture.as_mut() {
                if let Err(e) = c.finish() {
                    first.get_or_insert(format!("capture `{label}` on {}: {e}", f.name));
                }
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Captures in interface order: (link direction, label, packets, bytes).
    pub fn captures(&self) -> Vec<(&str, &str, u64, u64)> {
        self.ifaces
            .iter()
            .filter_map(|f| {
                f.capture
                    .as_ref()
                    .map(|(l, c)| (f.name.as_str(), l.as_str(), c.packets, c.bytes))
            })
            .collect()
    }
}
