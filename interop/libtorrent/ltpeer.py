#!/usr/bin/env python3
"""A libtorrent peer for hopwise's interop tests and lab: µTP only.

Every session has TCP switched off both ways (settings `enable_outgoing_tcp`
and `enable_incoming_tcp` false), µTP on, and no peer discovery (DHT, local
service discovery, UPnP, NAT-PMP off), so the only peers are the ones named
on the command line. Several connections from one address are allowed
(`allow_multiple_connections_per_ip`), since the tests run both peers on one
host.

    ltpeer.py make FILE --out T.torrent [--piece-size 256KiB] [--create-size 256MiB]
    ltpeer.py seed T.torrent --file FILE --listen IP:PORT [--secs N] [--once]
    ltpeer.py leech T.torrent --peer IP:PORT --save DIR [--timeout S] [--secs N]

`seed` serves FILE in seed mode (libtorrent trusts it and does not hash it
first). `leech` downloads from the one peer and checks every piece (libtorrent
hashes each piece as it completes) and dials the peer again if the connection
drops before the file is complete (`redials` in its summary counts that); with
`--secs N` it is a bulk transfer that
stops after N seconds, complete or not (the lab's use: a torrent larger than
N seconds of the link).

Each command prints one JSON line on stdout at the end: bytes, secs,
goodput_bps, and the peers as libtorrent saw them (address, whether the
connection is µTP, payload bytes each way), with `tcp_peers` (the number of
them that are not µTP, which must be 0). Errors (a timeout, a hash failure,
no peer) go to stderr with a non-zero exit status.

Needs libtorrent's Python bindings 2.1.x (interop/libtorrent/setup.sh).
"""

import argparse
import json
import os
import signal
import sys
import time

try:
    import libtorrent as lt
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.exit(
        f"ltpeer.py: cannot import libtorrent ({e}); run interop/libtorrent/setup.sh "
        "and use the python it prints"
    )

# peer_info::utp_socket is bit 17 of peer_info::flags (libtorrent 2.x,
# include/libtorrent/peer_info.hpp); the Python bindings do not export it
# by name.
UTP_SOCKET = getattr(lt.peer_info, "utp_socket", 1 << 17)
# Bits 6 (handshake) and 7 (connecting) of the same field: not connected yet.
NOT_YET = (1 << 6) | (1 << 7)
# Status polls: every 20 ms, so a transfer's time is known to that.
POLL_S = 0.02
# Until a peer answers, the leecher dials it again this often.
REDIAL_S = 2.0
# With --once, how long the seed waits for its peer to come back after
# it left before it exits: a leech whose connection dropped dials again.
ONCE_GRACE_S = 3.0


def now_s():
    return time.monotonic()


def fail(msg, code=1):
    print(f"ltpeer.py: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def parse_size(s):
    """'256KiB', '1MiB', '16384', '64MB' -> bytes."""
    units = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
             "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9}
    t = s.strip()
    i = len(t)
    while i > 0 and not t[i - 1].isdigit():
        i -= 1
    num, unit = t[:i], t[i:].strip()
    if not num.isdigit() or unit not in units:
        raise argparse.ArgumentTypeError(
            f"{s!r}: expected a whole number with B, KiB, MiB, GiB, kB, MB or GB")
    return int(num) * units[unit]


def parse_endpoint(s):
    host, sep, port = s.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise argparse.ArgumentTypeError(f"{s!r}: expected IP:PORT")
    return host.strip("[]"), int(port)


def session(listen):
    """A session with TCP off, µTP on and no discovery, listening on `listen`."""
    s = lt.session({
        "listen_interfaces": listen,
        "enable_outgoing_tcp": False,
        "enable_incoming_tcp": False,
        "enable_outgoing_utp": True,
        "enable_incoming_utp": True,
        "enable_dht": False,
        "enable_lsd": False,
        "enable_upnp": False,
        "enable_natpmp": False,
        "allow_multiple_connections_per_ip": True,
        # Peers on one host or subnet count as local; no limits apply anyway.
        "alert_mask": (lt.alert.category_t.error_notification
                       | lt.alert.category_t.status_notification
                       | lt.alert.category_t.peer_notification),
        "user_agent": "hopwise-ltpeer/" + lt.__version__,
    })
    return s


def load_torrent(path):
    try:
        return lt.torrent_info(path)
    except Exception as e:  # libtorrent raises RuntimeError with its message
        fail(f"{path}: not a torrent libtorrent can read ({e})")


class Peers:
    """The peers libtorrent reports, keyed by address, kept after they leave."""

    def __init__(self):
        self.seen = {}
        self.now = 0

    def poll(self, h):
        infos = [p for p in h.get_peer_info() if not int(p.flags) & NOT_YET]
        self.now = len(infos)
        for p in infos:
            addr = f"{p.ip[0]}:{p.ip[1]}"
            self.seen[addr] = {
                "addr": addr,
                "utp": bool(int(p.flags) & int(UTP_SOCKET)),
                "client": p.client.decode("utf-8", "replace") if isinstance(p.client, bytes) else p.client,
                "payload_down": p.total_download,
                "payload_up": p.total_upload,
            }

    def json(self):
        peers = sorted(self.seen.values(), key=lambda p: p["addr"])
        return {"peers": peers, "tcp_peers": sum(1 for p in peers if not p["utp"])}


def drain(s, log, errors, hash_failures):
    for a in s.pop_alerts():
        if isinstance(a, lt.hash_failed_alert):
            hash_failures.append(int(a.piece_index))
        elif isinstance(a, (lt.torrent_error_alert, lt.file_error_alert)):
            errors.append(a.message())
        elif isinstance(a, (lt.listen_failed_alert,)):
            errors.append(a.message())
        elif log and isinstance(a, (lt.peer_disconnected_alert, lt.peer_error_alert,
                                    lt.peer_connect_alert)):
            print(f"ltpeer.py: {a.message()}", file=sys.stderr, flush=True)


def summary(kind, nbytes, secs, peers, **extra):
    out = {"role": kind, "bytes": nbytes, "secs": round(secs, 4),
           "goodput_bps": round(nbytes * 8 / secs, 1) if secs > 0 else 0.0,
           "libtorrent": lt.__version__}
    out.update(extra)
    out.update(peers.json())
    print(json.dumps(out), flush=True)


def cmd_make(a):
    if a.create_size is not None and not os.path.exists(a.file):
        # A sparse file of zeros: the lab's bulk torrents only need a size.
        with open(a.file, "wb") as f:
            f.truncate(a.create_size)
    if not os.path.isfile(a.file):
        fail(f"{a.file}: no such file")
    files = lt.list_files(a.file)
    if len(files) != 1:
        fail(f"{a.file}: expected one file")
    # v1 only: hopwise speaks BEP 3 metainfo, not BEP 52's v2 trees.
    t = lt.create_torrent(files, a.piece_size, flags=lt.create_torrent.v1_only)
    # No tracker is used; some readers insist on an announce URL.
    t.add_tracker("http://127.0.0.1:1/announce")
    t.set_creator("hopwise interop (libtorrent " + lt.__version__ + ")")
    lt.set_piece_hashes(t, os.path.dirname(os.path.abspath(a.file)))
    with open(a.out, "wb") as f:
        f.write(lt.bencode(t.generate()))
    ti = lt.torrent_info(a.out)
    print(json.dumps({"torrent": a.out, "info_hash": str(ti.info_hashes().v1),
                      "bytes": ti.total_size(), "piece_size": ti.piece_length(),
                      "pieces": ti.num_pieces()}), flush=True)


def add_params(ti, save_path, flags):
    p = lt.add_torrent_params()
    p.ti = ti
    p.save_path = save_path
    p.flags = flags
    return p


def cmd_seed(a):
    ti = load_torrent(a.torrent)
    if not os.path.isfile(a.file):
        fail(f"{a.file}: no such file")
    if os.path.getsize(a.file) != ti.total_size():
        fail(f"{a.file}: {os.path.getsize(a.file)} bytes, but {a.torrent} describes "
             f"{ti.total_size()}")
    if ti.num_files() != 1:
        fail(f"{a.torrent}: only single-file torrents are served")
    s = session(f"{a.listen[0]}:{a.listen[1]}")
    p = add_params(ti, os.path.dirname(os.path.abspath(a.file)), lt.torrent_flags.seed_mode)
    # Serve FILE whatever its name: the torrent's one file is renamed to it.
    p.renamed_files = {0: os.path.basename(a.file)}
    h = s.add_torrent(p)
    stop = {"sig": None}

    def on_signal(sig, _frame):
        stop["sig"] = sig
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"ltpeer.py: seeding {ti.name()} ({ti.total_size()} bytes) on "
          f"{a.listen[0]}:{a.listen[1]} over µTP", file=sys.stderr, flush=True)
    peers, errors, hashfails = Peers(), [], []
    start = time.monotonic()
    first = None
    last_peer = start
    while stop["sig"] is None:
        time.sleep(POLL_S)
        drain(s, a.verbose, errors, hashfails)
        if errors:
            fail("libtorrent: " + "; ".join(errors))
        peers.poll(h)
        if peers.now and first is None:
            first = time.monotonic()
        if peers.now:
            last_peer = time.monotonic()
        elapsed = time.monotonic() - start
        if a.secs is not None and elapsed >= a.secs:
            break
        if (a.once and first is not None and peers.now == 0
                and time.monotonic() - last_peer >= ONCE_GRACE_S):
            break
    st = h.status()
    # Goodput counts from the first peer's arrival, when there was one.
    secs = time.monotonic() - (first if first is not None else start)
    summary("seed", st.total_payload_upload, secs, peers,
            all_time_upload=st.all_time_upload)
    if a.once and first is None:
        fail("no peer connected")


def cmd_leech(a):
    ti = load_torrent(a.torrent)
    os.makedirs(a.save, exist_ok=True)
    s = session(a.listen)
    h = s.add_torrent(add_params(ti, a.save, 0))
    h.connect_peer(a.peer)
    peers, errors, hashfails = Peers(), [], []
    start = time.monotonic()
    last_dial = start
    first = None
    ever_connected = False
    redials = 0
    last_report = start
    total = ti.total_size()
    while True:
        time.sleep(POLL_S)
        drain(s, a.verbose, errors, hashfails)
        if errors:
            fail("libtorrent: " + "; ".join(errors))
        peers.poll(h)
        if peers.now > 0 and not ever_connected:
            # Goodput counts from here: the peer has completed the BitTorrent
            # handshake (hopwise's download counts from its handshake too).
            first = time.monotonic()
        ever_connected = ever_connected or peers.now > 0
        st = h.status()
        if peers.now == 0 and not st.is_seeding and now_s() - last_dial >= REDIAL_S:
            # The peer may not have been listening yet, or the connection
            # dropped mid-transfer (µTP gives up after repeated timeouts):
            # dial again, as a client redials a peer it knows.
            if ever_connected:
                redials += 1
                print(f"ltpeer.py: the peer left with {st.total_wanted_done} of {total} "
                      f"bytes done; dialing again", file=sys.stderr, flush=True)
            last_dial = now_s()
            h.connect_peer(a.peer)
        now = time.monotonic()
        elapsed = now - start
        if a.progress and now - last_report >= 1.0:
            last_report = now
            print(f"ltpeer.py: {st.total_wanted_done} of {total} bytes after {elapsed:.1f} s",
                  file=sys.stderr, flush=True)
        if hashfails and not a.secs:
            fail(f"pieces {sorted(set(hashfails))} failed their SHA-1 check")
        if st.is_seeding:
            break
        if a.secs is not None and elapsed >= a.secs:
            break
        if not ever_connected and elapsed >= a.connect_timeout:
            fail(f"no peers: nothing answered at {a.peer[0]}:{a.peer[1]} over µTP "
                 f"within {a.connect_timeout} s")
        if elapsed >= a.timeout:
            fail(f"timeout after {a.timeout} s: {st.total_wanted_done} of {total} bytes "
                 f"verified")
    st = h.status()
    secs = time.monotonic() - (first if first is not None else start)
    complete = bool(st.is_seeding)
    # Payload bytes received; once complete, what was verified.
    nbytes = st.total_payload_download
    summary("leech", nbytes, secs, peers, complete=complete, verified=st.total_wanted_done,
            total=total, hash_failures=len(hashfails), redials=redials,
            file=os.path.join(a.save, ti.name()))
    if a.secs is None and not complete:
        fail("download incomplete")


def main():
    ap = argparse.ArgumentParser(prog="ltpeer.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--verbose", action="store_true", help="log peer events on stderr")
    sub = ap.add_subparsers(dest="cmd", required=True)

    m = sub.add_parser("make", help="write a v1-only single-file torrent")
    m.add_argument("file")
    m.add_argument("--out", required=True)
    m.add_argument("--piece-size", type=parse_size, default=256 << 10)
    m.add_argument("--create-size", type=parse_size, default=None,
                   help="create FILE as a sparse file of zeros of this size if it is missing")
    m.set_defaults(run=cmd_make)

    sd = sub.add_parser("seed", help="serve a file (seed mode, µTP only)")
    sd.add_argument("torrent")
    sd.add_argument("--file", required=True)
    sd.add_argument("--listen", type=parse_endpoint, required=True)
    sd.add_argument("--secs", type=float, default=None, help="stop after this many seconds")
    sd.add_argument("--once", action="store_true",
                    help="stop when the first peer has come and gone (and not come back "
                         "within 3 s)")
    sd.set_defaults(run=cmd_seed)

    lc = sub.add_parser("leech", help="download from one peer (µTP only)")
    lc.add_argument("torrent")
    lc.add_argument("--peer", type=parse_endpoint, required=True)
    lc.add_argument("--save", required=True)
    lc.add_argument("--listen", default="0.0.0.0:0", help="IP:PORT of our own µTP socket")
    lc.add_argument("--timeout", type=float, default=300.0)
    lc.add_argument("--connect-timeout", type=float, default=15.0)
    lc.add_argument("--secs", type=float, default=None,
                    help="bulk mode: stop after this many seconds, complete or not")
    lc.add_argument("--progress", action="store_true", help="bytes done on stderr every second")
    lc.set_defaults(run=cmd_leech)

    a = ap.parse_args()
    a.verbose = getattr(a, "verbose", False)
    a.run(a)


if __name__ == "__main__":
    main()
