//! Accepting TCP connections with a cap on how many are served at once (the
//! SOCKS listener and the metrics endpoint).
//!
//! A connection beyond the cap is closed as soon as it is accepted, without a
//! byte: to a SOCKS client that is a failed connect, which it reports, rather
//! than a task and buffers at the proxy for every connection anyone opens.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// How many connections a listener serves at once, and how many it refused.
#[derive(Debug)]
pub(crate) struct Gate {
    max: usize,
    sem: Arc<Semaphore>,
    refused: AtomicU64,
    accept_errors: AtomicU64,
}

impl Gate {
    pub fn new(max: usize) -> Arc<Gate> {
        Arc::new(Gate {
            max,
            sem: Arc::new(Semaphore::new(max)),
            refused: AtomicU64::new(0),
            accept_errors: AtomicU64::new(0),
        })
    }

    /// Connections being served now.
    pub fn open(&self) -> usize {
        self.max - self.sem.available_permits()
    }

    /// Connections closed at once because `max` were being served.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// Accepts forever; each connection within the cap runs `serve` in a task of
/// its own and holds its place until that task ends.
pub(crate) async fn serve_capped<F, Fut>(
    listener: TcpListener,
    gate: Arc<Gate>,
    what: &str,
    serve: F,
) where
    F: Fn(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    loop {
        let (s, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors (EMFILE), for instance: try again
                // shortly.
                let n = gate.accept_errors.fetch_add(1, Ordering::Relaxed) + 1;
                if n.is_power_of_two() {
                    tracing::warn!(error = %e, errors = n, "{what}: accept failed (is the open-file limit, ulimit -n, below the connection cap?)");
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let Ok(place) = gate.sem.clone().try_acquire_owned() else {
            let n = gate.refused.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    %peer,
                    refused = n,
                    "{what}: {} connections open, the most allowed; closing new ones",
                    gate.max
                );
            }
            drop(s);
            continue;
        };
        let task = serve(s, peer);
        tokio::spawn(async move {
            task.await;
            drop(place);
        });
    }
}
