//! BitTorrent swarms: the peer ([`peer::Peer`], the peer wire protocol
//! over simulated TCP) and the driver that plays the tracker, brings
//! leechers in and watches them finish ([`driver`]).

pub mod driver;
pub mod peer;
