//! Connection admission: who may hold one of the server's connection
//! slots. Pure bookkeeping, no I/O; the accept loop ([`super::http`]) calls it under a
//! mutex.
//!
//! A connection is *anonymous* until it sends a request with the valid token, then
//! *authenticated*. The rules:
//!
//! - at most `max_connections` connections in all;
//! - at most `max_per_peer` anonymous connections from one peer (an IPv4 address, or an
//!   IPv6 /64), so one host cannot hold every slot with idle or stalled sockets;
//! - at most `max_connections − reserve` anonymous connections in all: the `reserve`
//!   slots are kept for peers that have authenticated before (the last
//!   [`KNOWN_PEERS`] of them). A connection admitted to the reserve is answered 503 and
//!   closed unless its request carries the token, so hosts without the token, however
//!   many, never lock out a client that has it.
//!
//! An authenticated connection leaves the anonymous counts (it stays in the total).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

/// Peers remembered as having authenticated, most recent last.
pub const KNOWN_PEERS: usize = 256;

/// The key connections are counted under: an IPv4 address (an IPv4-mapped IPv6 address
/// as its IPv4 address) or an IPv6 address's /64 prefix (pure).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerKey {
    /// An IPv4 address.
    V4(u32),
    /// The /64 prefix of an IPv6 address.
    V6(u64),
}

impl PeerKey {
    /// The key of `ip`.
    pub fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self::V4(u32::from(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self::V4(u32::from(v4)),
                None => Self::V6((u128::from(v6) >> 64) as u64),
            },
        }
    }
}

/// How a connection holds its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Not yet authenticated, within the anonymous share.
    Anonymous,
    /// Admitted to the authenticated reserve: its first request must carry the token.
    Reserve,
    /// Has sent a request with the valid token.
    Authenticated,
}

/// The slot counts of one server.
#[derive(Debug)]
pub struct Admission {
    max_connections: usize,
    max_per_peer: usize,
    reserve: usize,
    total: usize,
    anonymous: usize,
    per_peer: HashMap<PeerKey, usize>,
    known: VecDeque<PeerKey>,
}

impl Admission {
    /// Counts for a server of `max_connections` slots, `max_per_peer` anonymous ones per
    /// peer and `reserve` kept for authenticated peers (at most half the slots).
    pub fn new(max_connections: usize, max_per_peer: usize, reserve: usize) -> Self {
        Self {
            max_connections,
            max_per_peer: max_per_peer.max(1),
            reserve: reserve.min(max_connections / 2),
            total: 0,
            anonymous: 0,
            per_peer: HashMap::new(),
            known: VecDeque::new(),
        }
    }

    /// The slot a new connection from `peer` gets, or `None`: it is closed at once.
    pub fn admit(&mut self, peer: PeerKey) -> Option<Slot> {
        if self.total >= self.max_connections {
            return None;
        }
        let mine = self.per_peer.get(&peer).copied().unwrap_or(0);
        let slot = if mine < self.max_per_peer && self.anonymous < self.anonymous_cap() {
            *self.per_peer.entry(peer).or_insert(0) += 1;
            self.anonymous += 1;
            Slot::Anonymous
        } else if self.known.contains(&peer) {
            Slot::Reserve
        } else {
            return None;
        };
        self.total += 1;
        Some(slot)
    }

    /// A connection of `peer` holding `slot` sent the valid token: it leaves the anonymous
    /// counts and `peer` is remembered. Returns the new slot.
    pub fn authenticate(&mut self, peer: PeerKey, slot: Slot) -> Slot {
        if slot == Slot::Anonymous {
            self.leave_anonymous(peer);
        }
        if let Some(i) = self.known.iter().position(|k| *k == peer) {
            self.known.remove(i);
        } else if self.known.len() >= KNOWN_PEERS {
            self.known.pop_front();
        }
        self.known.push_back(peer);
        Slot::Authenticated
    }

    /// A connection of `peer` holding `slot` closed.
    pub fn release(&mut self, peer: PeerKey, slot: Slot) {
        if slot == Slot::Anonymous {
            self.leave_anonymous(peer);
        }
        self.total = self.total.saturating_sub(1);
    }

    /// Open connections.
    pub fn total(&self) -> usize {
        self.total
    }

    fn anonymous_cap(&self) -> usize {
        self.max_connections - self.reserve
    }

    fn leave_anonymous(&mut self, peer: PeerKey) {
        self.anonymous = self.anonymous.saturating_sub(1);
        if let Some(n) = self.per_peer.get_mut(&peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(n: u8) -> PeerKey {
        PeerKey::of(IpAddr::from([127, 0, 0, n]))
    }

    #[test]
    fn one_peer_holds_at_most_its_share() {
        let mut a = Admission::new(100, 4, 10);
        for _ in 0..4 {
            assert_eq!(a.admit(peer(2)), Some(Slot::Anonymous));
        }
        assert_eq!(a.admit(peer(2)), None);
        assert_eq!(a.admit(peer(3)), Some(Slot::Anonymous));
        a.release(peer(2), Slot::Anonymous);
        assert_eq!(a.admit(peer(2)), Some(Slot::Anonymous));
    }

    #[test]
    fn the_reserve_is_for_peers_that_authenticated() {
        let mut a = Admission::new(8, 8, 2);
        let s = a.admit(peer(1)).unwrap();
        assert_eq!(a.authenticate(peer(1), s), Slot::Authenticated);
        // Hostile peers fill the anonymous share (8 − 2 reserved).
        for n in 2..8 {
            assert_eq!(a.admit(peer(n)), Some(Slot::Anonymous), "{n}");
        }
        assert_eq!(a.admit(peer(9)), None, "anonymous share full");
        // The peer that authenticated still gets in, through the reserve.
        assert_eq!(a.admit(peer(1)), Some(Slot::Reserve));
        assert_eq!(a.total(), 8);
        assert_eq!(a.admit(peer(1)), None, "no slot left at all");
    }

    #[test]
    fn authenticated_connections_leave_the_peer_share() {
        let mut a = Admission::new(100, 2, 10);
        let s1 = a.admit(peer(1)).unwrap();
        let s2 = a.admit(peer(1)).unwrap();
        assert_eq!(a.admit(peer(1)), None);
        let s1 = a.authenticate(peer(1), s1);
        assert_eq!(a.admit(peer(1)), Some(Slot::Anonymous));
        a.release(peer(1), s1);
        a.release(peer(1), s2);
        assert_eq!(a.total(), 1);
    }

    #[test]
    fn ipv6_peers_count_by_64_prefix_and_mapped_v4_as_v4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(PeerKey::of(a), PeerKey::of(b));
        assert_ne!(PeerKey::of(a), PeerKey::of(c));
        let m: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert_eq!(PeerKey::of(m), peer(1));
    }

    #[test]
    fn the_known_list_is_bounded() {
        let mut a = Admission::new(10_000, 4, 100);
        for n in 0..(KNOWN_PEERS as u32 + 10) {
            let p = PeerKey::of(IpAddr::from(n.to_be_bytes()));
            let s = a.admit(p).unwrap();
            a.authenticate(p, s);
        }
        assert_eq!(a.known.len(), KNOWN_PEERS);
    }
}
