//! # hopwise-sim
//!
//! A deterministic, packet-level discrete-event network simulator. It runs
//! the sans-IO protocol code of `hopwise-proto` unchanged.

#![forbid(unsafe_code)]

pub mod agent;
pub mod aqm;
pub mod link;
pub mod measure;
pub mod packet;
pub mod pcap;
pub mod qdisc;
pub mod query;
mod queue;
pub mod report;
pub mod routing;
pub mod scenario;
pub mod sim;
pub mod spec;

pub use agent::{Agent, Cx, Sock, SockEvent};
pub use measure::{QueueSample, TraceSample};
pub use packet::NodeId;
pub use query::{FlowId, IfaceId};
pub use sim::Sim;
