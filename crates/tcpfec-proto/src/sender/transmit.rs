//! What goes on the wire next: the window and pacing gate, first transmissions cut from
//! the application's data, and retransmissions of segments the scoreboard marks lost.

use super::{OutSegment, Outgoing, RetransmissionSent, Sender};
use crate::time::Instant;
use bytes::Bytes;

impl Sender {
    pub(super) fn has_new_data(&self) -> bool {
        self.unsent_bytes > 0 || (self.fin_requested && !self.fin_sent)
    }

    pub(super) fn window_allows(&self, len: usize) -> bool {
        self.force_probe || self.sb.bytes_outstanding() + len <= self.peer_window as usize
    }

    /// The next packet the window and the data allow.
    #[inline]
    pub(super) fn poll_window(&mut self, now: Instant) -> Option<Outgoing> {
        if self.idle() {
            // What the full path below does with nothing to send and nothing in flight,
            // in short: a receiver's sender comes here after every segment it takes in.
            self.cwnd_limited = false;
            self.sb.rate.on_app_limited(0);
            self.app_limited = true;
            return None;
        }
        let mut cwnd = self.cc.cwnd();
        if let Some(cap) = self.congestion_cap.as_ref().and_then(|c| c.limit()) {
            cwnd = cwnd.min(cap);
        }
        if let Some(r) = self.resume.as_ref() {
            let mss = self.mss as f64;
            if let Some(floor) = r.cwnd_floor() {
                cwnd = cwnd.max(floor / mss);
            }
            if let Some(cap) = r.cwnd_cap() {
                cwnd = cwnd.min(cap / mss);
            }
        }
        // TCP-TFEC and TCP-AFEC with a target rate send no faster than the target needs.
        if let (Some(c), Some(r)) = (self.control.as_ref(), self.target_rate_bps) {
            if let Some(cap) = c.window_cap(r, self.smoothed_rtt(), self.mss) {
                cwnd = cwnd.min(cap);
            }
        }
        // Truncation is the floor of a positive window (and a saturating one).
        let cwnd = (cwnd as usize).max(1);
        let window_open = self.pipe() < cwnd;
        if window_open || self.force_retransmit {
            if let Some(seg) = self.sb.next_retransmission() {
                self.force_retransmit = false;
                return Some(Outgoing::Segment(self.retransmit(now, seg)));
            }
            self.force_retransmit = false;
            if let Some((enc, _)) = self.fec.as_mut() {
                // No retransmission is due with the window open: the run has ended, and
                // its group's repairs follow now rather than wait for a later one.
                enc.flush_retransmissions();
            }
        }
        // A group's repairs follow its last member at once, even when that member used the
        // last of the window: they count in pipe (throttling later data) but never wait
        // for an ACK — the receiver may be withholding duplicate ACKs until they arrive.
        // (Checked here first: most schemes have no encoder, and this runs for every
        // packet.)
        if self.fec.is_some() {
            if let Some(r) = self.poll_repair(now) {
                return Some(Outgoing::Repair(r));
            }
        }
        if self.stream.is_some() {
            if let Some(r) = self.poll_window_repair(now) {
                return Some(Outgoing::WindowRepair(r));
            }
        }
        if !self.has_new_data() {
            self.cwnd_limited = false;
            if window_open {
                // Nothing to send with room in the window: rate samples until this
                // flight is delivered show the application's rate, not the path's.
                let in_flight = self.in_flight_bytes();
                self.sb.rate.on_app_limited(in_flight);
                self.app_limited = true;
            }
            // Out of data: if none comes for half a round trip, the open groups are closed
            // so the tail of a transfer, or a pause in a stream, is protected too. Closing
            // at once would cut a paced stream into one-packet groups.
            let ended = self.fin_requested;
            // A stream's interval ends at once when the stream has ended; a pause leaves
            // it open until its deadline, so that its repairs leave apart from its last
            // packet rather than in the same loss burst (docs/design/on-time.md).
            if ended && self.stream.as_ref().is_some_and(|s| s.is_open()) {
                self.close_stream_interval(now);
                return self.poll_window_repair(now).map(Outgoing::WindowRepair);
            }
            if let Some((enc, f)) = self.fec.as_mut() {
                if enc.has_open_group() && ended && f.close_at_stream_end {
                    enc.flush();
                    return self.poll_repair(now).map(Outgoing::Repair);
                }
                if enc.has_open_group() && self.idle_flush_deadline.is_none() {
                    self.idle_flush_deadline = Some(now + self.smoothed_rtt() / 2);
                }
            }
            return None;
        }
        if !(window_open || self.force_probe) {
            self.cwnd_limited = true;
            self.app_limited = false;
            if let Some(r) = self.resume.as_mut() {
                let flight = self.sb.bytes_outstanding() as f64;
                let next = self.sb.rate.next_order();
                let action = r.on_window_full(flight, next);
                self.apply_resume(action);
            }
            self.arm_flush(now);
            return None;
        }
        let next_len = self.unsent.front().map_or(0, |b| b.len().min(self.mss));
        if !self.window_allows(next_len) {
            if self.sb.outstanding() == 0 && self.rto_deadline.is_none() {
                self.arm_rto(now); // persist: probe the closed window when it fires
            }
            self.arm_flush(now);
            return None;
        }
        self.force_probe = false;
        let (payload, fin) = self.take_new_payload();
        self.idle_flush_deadline = None;
        let rtt = self.smoothed_rtt();
        if let Some(c) = self.control.as_mut() {
            c.on_send(now, rtt);
        }
        let in_flight = self.in_flight_bytes();
        let seg = self.sb.push(now, payload.clone(), fin, in_flight);
        if fin {
            self.fin_sent = true;
        }
        self.count_sent(payload.len());
        if self.rto_deadline.is_none() {
            self.arm_rto(now);
        }
        self.arm_probe(now);
        let cwr = std::mem::take(&mut self.cwr_pending);
        let cwnd = self.cc.cwnd();
        let streaming = self.stream.is_some() && self.app_limited;
        if self.stream.is_some() && !streaming {
            // Bulk data again: the stream's interval ends before the blocks resume.
            self.close_stream_interval(now);
            if let Some(s) = self.stream.as_mut() {
                s.restart();
            }
        }
        let fec = match self.fec.as_mut() {
            Some((enc, _)) if streaming => {
                // A stream's packets are covered by the window code, not by blocks.
                enc.flush();
                None
            }
            Some((enc, _)) if !payload.is_empty() => Some(enc.add(seg, &payload, cwnd)),
            _ => None,
        };
        if streaming {
            let wait = self.stream_wait();
            let longest = self.auto_control().map_or(u32::MAX, |a| a.code().k as u32);
            let s = self.stream.as_mut().expect("streaming");
            if s.on_sent(now, seg, &payload, wait, longest) {
                self.close_stream_interval(now);
            }
        }
        self.arm_block_deadline(now, seg);
        // FEC-aware loss detection (`Scoreboard::mark_lost_by_sack`) for the controllers
        // that model the path; window-only schemes keep RFC 6675's rule (their behaviour
        // is pinned by the regression matrix).
        if let Some(g) = fec.filter(|_| self.models_path) {
            // Until its group closes, its repairs leave at the latest after its last member.
            self.sb.protect(seg, g, g.last() + 1, None);
        }
        Some(Outgoing::Segment(OutSegment {
            seg,
            payload,
            fin,
            cwr,
            fec,
        }))
    }

    /// Nothing to send, nothing in flight, nothing owed: no data or FIN waiting, no
    /// segment outstanding (so none to retransmit and a pipe of 0), no encoder that
    /// could hold repairs.
    pub(super) fn idle(&self) -> bool {
        self.unsent_bytes == 0
            && !self.fin_requested
            && !self.force_retransmit
            && !self.force_probe
            && self.sb.outstanding() == 0
            && self.repairs_in_flight.is_empty()
            && self.fec.is_none()
            && self.stream.is_none()
    }

    pub(super) fn take_new_payload(&mut self) -> (Bytes, bool) {
        let mut out: Option<Bytes> = None;
        // Coalesce small writes up to one MSS; a chunk larger than that is split.
        while let Some(front) = self.unsent.front_mut() {
            let have = out.as_ref().map_or(0, |b| b.len());
            let room = self.mss - have;
            if room == 0 {
                break;
            }
            let piece = if front.len() <= room {
                self.unsent.pop_front().expect("front exists")
            } else {
                front.split_to(room)
            };
            self.unsent_bytes -= piece.len();
            out = Some(match out {
                None => piece,
                Some(prev) => {
                    let mut v = Vec::with_capacity(prev.len() + piece.len());
                    v.extend_from_slice(&prev);
                    v.extend_from_slice(&piece);
                    Bytes::from(v)
                }
            });
        }
        let payload = out.unwrap_or_default();
        // With FEC the FIN travels alone, on an empty segment that no group protects: a
        // data segment can be rebuilt from a repair, which restores its bytes but not its
        // flags, and the receiver's cumulative ACK would then cover a FIN it never saw —
        // the sender stops resending it and the stream never ends.
        let fin = self.fin_requested
            && self.unsent_bytes == 0
            && !self.fin_sent
            && (payload.is_empty() || self.fec.is_none());
        (payload, fin)
    }

    pub(super) fn retransmit(&mut self, now: Instant, seg: u64) -> OutSegment {
        let in_flight = self.in_flight_bytes();
        // Measured before this one is marked sent: the retransmissions due from here on,
        // as many as one group holds (only when retransmissions are protected).
        let cwnd = self.cc.cwnd();
        let run = match self.fec.as_ref() {
            Some((enc, f)) if f.protect_retransmissions => {
                self.sb.due_run_from(seg, enc.group_size_at(cwnd) as u64)
            }
            _ => 0,
        };
        // Only a lost segment sent again can be lost again; a tail probe's copy of a
        // segment still in flight is no loss if it goes missing.
        let track = self.sb.on_retransmitted(now, seg, in_flight) && self.rack;
        let s = self.sb.get(seg).expect("retransmission is outstanding");
        let (payload, fin) = (s.payload.clone(), s.fin);
        // `auto` sizes each group of retransmissions to its failure target (none where a
        // loss among them is rarer than that); Sato's schemes give every group the
        // repairs of a block.
        let auto = self.control.as_ref().and_then(|c| c.as_auto());
        let fec = match self.fec.as_mut() {
            Some((enc, f)) if f.protect_retransmissions && !payload.is_empty() => {
                let block_repairs = enc.repairs();
                enc.add_retransmission(seg, &payload, run, cwnd, |n| {
                    auto.map_or(block_repairs, |a| a.retransmission_repairs(n as usize))
                })
            }
            _ => None,
        };
        if track {
            self.retransmitted_order.push_back(RetransmissionSent {
                seg,
                group: fec.map_or(0, |g| g.retransmission_group),
                repairs_order: None,
            });
        }
        let out = OutSegment {
            seg,
            payload,
            fin,
            cwr: false,
            fec,
        };
        self.retransmissions += 1;
        self.trace.push(crate::TraceEvent::Retransmitted {
            seg,
            len: out.payload.len() as u32,
        });
        self.count_sent(out.payload.len());
        // Under a controller that models the path (the BBR schemes, as on Linux) the timer
        // restarts with a retransmission of the first unacknowledged segment: its ACK
        // needs a round trip from now, and a timer left running from the last cumulative
        // ACK fired just before that ACK arrived (`auto`'s start-up with 5 % loss on a
        // 400 ms path: the loss was found 0.2 s after the last cumulative ACK, and the
        // 0.6 s timer went off 2 ms before the retransmission's ACK and resent the whole
        // flight). Window-only schemes keep the timer their reproductions were made with.
        let restart = self.models_path && seg == self.sb.una();
        if self.rto_deadline.is_none() || restart {
            self.arm_rto(now);
        }
        out
    }

    pub(super) fn count_sent(&mut self, len: usize) {
        self.data_packets_sent += 1;
        self.payload_bytes_sent += len as u64;
    }
}
