//! Builds the nodes, links and routes of a scenario's topology.

use crate::link::Link;
use crate::loss::{LossModel, LossSpec};
use crate::rng::Rng;
use crate::scenario::{Scenario, Topology};

/// Random stream numbers: one per link direction, counted from here.
const LINK_STREAM_BASE: u64 = 1000;
/// Random streams of the hosts' send jitter, one per link, apart from the loss streams.
const JITTER_STREAM_BASE: u64 = 1_000_000;

/// The built network.
///
/// Every topology built here is a tree of duplex links, so there is exactly one path between
/// two nodes and routes need no table: memory stays O(nodes) rather than O(nodes²) (a
/// dumbbell of 40 000 flows has 80 002 nodes, 25 GB as a full table).
#[derive(Debug)]
pub struct Network {
    /// Every link direction.
    pub links: Vec<Link>,
    /// The tree rooted at node 0, indexed by node.
    tree: Vec<TreeNode>,
    /// For each flow, the node of its sender and of its receiver.
    pub flow_hosts: Vec<(u32, u32)>,
    is_host: Vec<bool>,
}

/// A node's place in the routing tree.
#[derive(Debug, Clone, Copy)]
struct TreeNode {
    /// Parent node (the root is its own parent).
    parent: u32,
    /// Hops from the root.
    depth: u32,
    /// The link from this node to its parent.
    up: u32,
    /// The link from the parent to this node.
    down: u32,
}

impl Network {
    /// Builds the topology of `sc`.
    pub fn build(sc: &Scenario) -> Network {
        let mut b = Builder::new(sc);
        let n = sc.flows;
        let (r1, r2) = match sc.topology {
            Topology::Path => {
                let (s, r1, r2, d) = (b.node(true), b.node(false), b.node(false), b.node(true));
                // Link order (access, bottleneck, access) fixes the random streams.
                let ad = sc.access_delay_of(0);
                b.access(s, r1, ad);
                b.bottleneck(r1, r2);
                b.access(r2, d, ad);
                b.flow_hosts = (0..n).map(|_| (s, d)).collect();
                (r1, r2)
            }
            Topology::Dumbbell => {
                let (r1, r2) = (b.node(false), b.node(false));
                b.bottleneck(r1, r2);
                for i in 0..n {
                    let pair = b.host_pair(r1, r2, sc.access_delay_of(i));
                    b.flow_hosts.push(pair);
                }
                (r1, r2)
            }
        };
        // Background flows: their own hosts on either side of the bottleneck, 1 ms away.
        for _ in 0..sc.background {
            let (left, right) = b.host_pair(r1, r2, core::time::Duration::from_millis(1));
            b.flow_hosts.push(if sc.background_uplink {
                (right, left)
            } else {
                (left, right)
            });
        }
        b.finish()
    }

    /// The link a packet at `node` takes towards `dst` (`node != dst`): down towards `dst` if
    /// `dst` lies below `node` in the tree, else up to the parent. Costs one step per level
    /// of the tree, at most three in these topologies.
    #[inline]
    pub fn route(&self, node: u32, dst: u32) -> u32 {
        let depth = self.tree[node as usize].depth;
        let (mut x, mut below) = (dst, u32::MAX);
        while self.tree[x as usize].depth > depth {
            below = x;
            x = self.tree[x as usize].parent;
        }
        if x == node && below != u32::MAX {
            self.tree[below as usize].down
        } else {
            self.tree[node as usize].up
        }
    }

    /// One-way propagation delay from node `src` to node `dst`, ns (no queueing, no
    /// serialisation).
    pub fn propagation_ns(&self, src: u32, dst: u32) -> u64 {
        let (mut node, mut total) = (src, 0);
        while node != dst {
            let link = &self.links[self.route(node, dst) as usize];
            total += link.delay_ns();
            node = link.to;
        }
        total
    }

    /// True if `node` is a host (has endpoints), false for a router.
    #[inline]
    pub fn is_host(&self, node: u32) -> bool {
        self.is_host[node as usize]
    }
}

struct Builder<'a> {
    sc: &'a Scenario,
    links: Vec<Link>,
    from: Vec<u32>,
    is_host: Vec<bool>,
    flow_hosts: Vec<(u32, u32)>,
}

impl<'a> Builder<'a> {
    fn new(sc: &'a Scenario) -> Self {
        Builder {
            sc,
            links: Vec::new(),
            from: Vec::new(),
            is_host: Vec::new(),
            flow_hosts: Vec::new(),
        }
    }

    fn queue_limit(&self, from: u32) -> usize {
        let limit = match self.sc.host_buffer {
            Some(h) if self.is_host[from as usize] => h,
            _ => self.sc.buffer,
        };
        limit as usize
    }

    fn node(&mut self, host: bool) -> u32 {
        self.is_host.push(host);
        (self.is_host.len() - 1) as u32
    }

    fn simplex(&mut self, a: u32, b: u32, bps: u64, delay: core::time::Duration, loss: LossSpec) {
        let stream = LINK_STREAM_BASE + self.links.len() as u64;
        let model = LossModel::new(loss, Rng::new(self.sc.seed, stream));
        let delay_ns = delay.as_nanos() as u64;
        let mut link = Link::new(b, bps, delay_ns, self.queue_limit(a), model);
        if self.is_host[a as usize] && !self.sc.send_jitter.is_zero() {
            let rng = Rng::new(self.sc.seed, JITTER_STREAM_BASE + self.links.len() as u64);
            link.set_jitter(self.sc.send_jitter.as_nanos() as u64, rng);
        }
        self.links.push(link);
        self.from.push(a);
    }

    /// The bottleneck between the routers, with the scenario's rate, delay and losses.
    fn bottleneck(&mut self, r1: u32, r2: u32) {
        let sc = self.sc;
        self.duplex(
            r1,
            r2,
            sc.bottleneck_bps,
            sc.delay,
            sc.loss,
            sc.reverse_loss,
        );
    }

    /// A loss-free access link between a host and a router.
    fn access(&mut self, a: u32, b: u32, delay: core::time::Duration) {
        let bps = self.sc.access_bps;
        self.duplex(a, b, bps, delay, LossSpec::None, LossSpec::None);
    }

    /// Two new hosts, one left of `r1` and one right of `r2`, `delay` away.
    fn host_pair(&mut self, r1: u32, r2: u32, delay: core::time::Duration) -> (u32, u32) {
        let (left, right) = (self.node(true), self.node(true));
        self.access(left, r1, delay);
        self.access(r2, right, delay);
        (left, right)
    }

    fn duplex(
        &mut self,
        a: u32,
        b: u32,
        bps: u64,
        delay: core::time::Duration,
        ab: LossSpec,
        ba: LossSpec,
    ) {
        self.simplex(a, b, bps, delay, ab);
        self.simplex(b, a, bps, delay, ba);
    }

    fn finish(self) -> Network {
        let tree = routing_tree(&self.links, &self.from, self.is_host.len());
        Network {
            links: self.links,
            tree,
            flow_hosts: self.flow_hosts,
            is_host: self.is_host,
        }
    }
}

/// Roots the network at node 0: each node's parent, depth and the links to and from its
/// parent. `links[i]` runs from `from[i]` to `links[i].to`.
///
/// # Panics
/// If the links do not form a tree of duplex links (a bug in a topology builder, as no
/// user input can cause it): routing relies on the path between two nodes being unique.
fn routing_tree(links: &[Link], from: &[u32], nodes: usize) -> Vec<TreeNode> {
    assert_eq!(
        links.len(),
        2 * nodes.saturating_sub(1),
        "a tree of duplex links"
    );
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); nodes];
    for (i, &f) in from.iter().enumerate() {
        out[f as usize].push(i as u32);
    }
    let unset = TreeNode {
        parent: u32::MAX,
        depth: 0,
        up: u32::MAX,
        down: u32::MAX,
    };
    let mut tree = vec![unset; nodes];
    if nodes == 0 {
        return tree;
    }
    tree[0].parent = 0;
    // Breadth-first from the root: the first link reaching a node is its down link.
    let mut order = vec![0u32];
    let mut next = 0;
    while let Some(&n) = order.get(next) {
        next += 1;
        for &l in &out[n as usize] {
            let to = links[l as usize].to as usize;
            if tree[to].parent == u32::MAX {
                tree[to].parent = n;
                tree[to].depth = tree[n as usize].depth + 1;
                tree[to].down = l;
                order.push(to as u32);
            }
        }
    }
    assert_eq!(order.len(), nodes, "a connected network");
    for (l, &f) in from.iter().enumerate() {
        let to = links[l].to;
        if tree[to as usize].down != l as u32 {
            assert_eq!(tree[f as usize].parent, to, "one link pair per node pair");
            tree[f as usize].up = l as u32;
        }
    }
    assert!(
        tree[1..].iter().all(|t| t.up != u32::MAX),
        "a link back to every parent"
    );
    tree
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// The first link on a shortest path from `src` to `dst`, by breadth-first search over
    /// every link: what a full routing table would hold.
    fn first_hop(net: &Network, from: &[u32], src: u32, dst: u32) -> u32 {
        let mut first = vec![u32::MAX; net.is_host.len()];
        let mut seen = vec![false; net.is_host.len()];
        seen[src as usize] = true;
        let mut q = VecDeque::from([src]);
        while let Some(n) = q.pop_front() {
            for (l, link) in net.links.iter().enumerate() {
                let to = link.to as usize;
                if from[l] == n && !seen[to] {
                    seen[to] = true;
                    first[to] = if n == src {
                        l as u32
                    } else {
                        first[n as usize]
                    };
                    q.push_back(to as u32);
                }
            }
        }
        first[dst as usize]
    }

    /// The node each link leaves, recovered from the tree (every link is a down or up link).
    fn link_sources(net: &Network) -> Vec<u32> {
        let mut from = vec![u32::MAX; net.links.len()];
        for (n, t) in net.tree.iter().enumerate().skip(1) {
            from[t.up as usize] = n as u32;
            from[t.down as usize] = t.parent;
        }
        from
    }

    #[test]
    fn tree_routes_are_the_shortest_paths() {
        for (topology, background) in [(Topology::Path, 0), (Topology::Dumbbell, 2)] {
            let sc = Scenario {
                topology,
                flows: 3,
                background,
                ..Scenario::default()
            };
            let net = Network::build(&sc);
            let from = link_sources(&net);
            assert!(from.iter().all(|&f| f != u32::MAX));
            let nodes = net.is_host.len() as u32;
            for src in 0..nodes {
                for dst in (0..nodes).filter(|&d| d != src) {
                    assert_eq!(
                        net.route(src, dst),
                        first_hop(&net, &from, src, dst),
                        "{topology:?}: {src} -> {dst}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_large_dumbbell_builds_in_linear_memory() {
        // 80 002 nodes: a full routing table would be 25 GB.
        let sc = Scenario {
            topology: Topology::Dumbbell,
            flows: 40_000,
            ..Scenario::default()
        };
        let net = Network::build(&sc);
        assert_eq!(net.links.len(), 2 * 80_001);
        let (s, d) = net.flow_hosts[39_999];
        // Sender, its router, across the bottleneck (link 0), the far router, the receiver.
        let mut at = s;
        let mut hops = Vec::new();
        while at != d {
            let l = net.route(at, d);
            hops.push(l);
            at = net.links[l as usize].to;
        }
        assert_eq!(hops.len(), 3);
        assert_eq!(hops[1], 0, "the bottleneck, R1 to R2");
    }
}
