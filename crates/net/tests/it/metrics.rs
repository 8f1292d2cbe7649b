//! The Prometheus endpoint: off by default, on loopback when configured,
//! with the series the operator's guide lists.

use crate::common;
use hopwise_net::testbed::{self, Lab, LabOptions};
use std::time::Duration;

#[test]
fn metrics_endpoint_serves_prometheus_text() {
    let d = tempfile::tempdir().unwrap();
    let mut o = LabOptions::new(d.path());
    o.allow_loopback_exit = true;
    o.relay_extra = "\n[metrics]\nlisten = \"127.0.0.1:0\"\n".into();
    let lab = Lab::start(&o).unwrap();
    assert!(lab.proxy.metrics.is_none(), "off unless configured");
    let addr = lab.relays[1].metrics.expect("metrics address");
    let rt = common::runtime();
    let body = rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30)).await.unwrap();
        let server = testbed::start_file_server(9, 2_000_000).await.unwrap();
        testbed::download(lab.socks(), "127.0.0.1", server.port())
            .await
            .unwrap();
        common::scrape(addr).await
    });
    assert!(body.starts_with("HTTP/1.1 200 OK\r\n"), "{body}");
    assert!(body.contains("text/plain; version=0.0.4"));
    for series in [
        "hopwise_circuits{node=\"relay2\",role=\"relay\"} 1",
        "# TYPE hopwise_cells_out_total counter",
        "hopwise_drops_total{node=\"relay2\",reason=\"replay\"} 0",
        "hopwise_retransmits{node=\"relay2\",kind=\"all\"}",
        "hopwise_circuit_swnd_cells{node=\"relay2\",circuit=\"0\",dir=\"backward\"}",
        "hopwise_circuit_queue_cells{node=\"relay2\",circuit=\"0\",dir=\"forward\"}",
        "hopwise_queue_cells_max{node=\"relay2\"}",
        "hopwise_held_cells{node=\"relay2\"}",
        "hopwise_stream_buffer_bytes{node=\"relay2\"}",
        "hopwise_streams_shed_total{node=\"relay2\"}",
        "hopwise_circuits_shed_total{node=\"relay2\"} 0",
    ] {
        assert!(body.contains(series), "missing {series}:\n{body}");
    }
    let cells: u64 = body
        .lines()
        .find(|l| l.starts_with("hopwise_cells_out_total"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(cells >= 4000, "2 MB is over 4000 cells, got {cells}");
    lab.shutdown();
}
