//! What a connection did that its packets alone do not show, for traces (qlog): which
//! segment it sent again, which one a repair rebuilt. Collected only when
//! [`crate::Config::trace`] is on; the driver drains them with
//! [`crate::Endpoint::drain_trace`] and sees the packets themselves as it moves them.

/// One engine event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceEvent {
    /// The sender sent segment `seg` again: it declared it lost (by duplicate ACKs, SACK,
    /// RACK's time rule or a retransmission timeout), or probed the tail with it. One per
    /// retransmission: as many as `Stats::retransmissions` counts.
    Retransmitted {
        /// Segment number.
        seg: u64,
        /// Payload bytes.
        len: u32,
    },
    /// The receiver rebuilt segment `seg` from repair packets, without a retransmission.
    /// One per rebuilt segment: as many as `Stats::recovered` counts.
    Rebuilt {
        /// Segment number.
        seg: u64,
        /// Payload bytes.
        len: u32,
    },
}

/// Events collected while tracing is on; nothing (and no allocation) when it is off.
#[derive(Debug, Default)]
pub(crate) struct TraceLog(Option<Vec<TraceEvent>>);

impl TraceLog {
    /// A log that collects if `on`.
    pub(crate) fn new(on: bool) -> Self {
        TraceLog(on.then(Vec::new))
    }

    /// Records `e` if tracing is on.
    #[inline]
    pub(crate) fn push(&mut self, e: TraceEvent) {
        if let Some(v) = &mut self.0 {
            v.push(e);
        }
    }

    /// Moves what was recorded into `out`.
    pub(crate) fn drain_into(&mut self, out: &mut Vec<TraceEvent>) {
        if let Some(v) = &mut self.0 {
            out.append(v);
        }
    }
}
