//! Builds the nodes, links and routes of a scenario's topology.

use crate::link::Link;
use crate::loss::{LossModel, LossSpec};
use crate::rng::Rng;
use crate::scenario::{Scenario, Topology};
use std::collections::VecDeque;

/// Random stream numbers: one per link direction, counted from here.
const LINK_STREAM_BASE: u64 = 1000;

/// The built network.
#[derive(Debug)]
pub struct Network {
    /// Every link direction.
    pub links: Vec<Link>,
    /// `routes[node * nodes + dst]` is the link a packet at `node` for `dst` takes.
    routes: Vec<u32>,
    nodes: usize,
    /// For each flow, the node of its sender and of its receiver.
    pub flow_hosts: Vec<(u32, u32)>,
    is_host: Vec<bool>,
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

    /// The link a packet at `node` takes towards `dst`.
    #[inline]
    pub fn route(&self, node: u32, dst: u32) -> u32 {
        self.routes[node as usize * self.nodes + dst as usize]
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
        self.links
            .push(Link::new(b, bps, delay_ns, self.queue_limit(a), model));
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
        let nodes = self.is_host.len();
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); nodes];
        for (i, &f) in self.from.iter().enumerate() {
            out[f as usize].push(i as u32);
        }
        // Breadth-first search from every node: the first link on a shortest path.
        let mut routes = vec![u32::MAX; nodes * nodes];
        for src in 0..nodes {
            let mut first = vec![u32::MAX; nodes];
            let mut seen = vec![false; nodes];
            seen[src] = true;
            let mut q = VecDeque::from([src]);
            while let Some(n) = q.pop_front() {
                for &l in &out[n] {
                    let to = self.links[l as usize].to as usize;
                    if !seen[to] {
                        seen[to] = true;
                        first[to] = if n == src { l } else { first[n] };
                        q.push_back(to);
                    }
                }
            }
            routes[src * nodes..(src + 1) * nodes].copy_from_slice(&first);
        }
        Network {
            links: self.links,
            routes,
            nodes,
            flow_hosts: self.flow_hosts,
            is_host: self.is_host,
        }
    }
}
