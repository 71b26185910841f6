//! The public message buffer (`rmr_mbuf_t`) and the frame buffer behind it.
//!
//! The first twelve fields are the C layout ricxappframe reads through ctypes; the rest
//! is private. The frame buffer holds the transport prefix, header, trace, d1, d2 and
//! payload contiguously so a send is one write.

use std::os::raw::{c_int, c_void};

use crate::consts::*;
use crate::frame::{self, FrameInfo, D1_LEN, HDR_LEN, TP_HDR_LEN};

/// A received or to-be-sent frame (prefix included) and where its parts are.
#[derive(Debug)]
pub struct Msg {
    pub buf: Vec<u8>,
    pub info: FrameInfo,
    /// Connection it arrived on (0: none).
    pub conn: u64,
}

const MAGIC: u64 = 0x6f63_746f_726d_7231; // "octormr1": guards against foreign pointers

#[repr(C)]
pub struct Mbuf {
    pub state: c_int,
    pub mtype: c_int,
    pub len: c_int,
    pub payload: *mut u8,
    pub xaction: *mut u8,
    pub sub_id: c_int,
    pub tp_state: c_int,
    pub tp_buf: *mut c_void,
    pub header: *mut c_void,
    pub id: *mut u8,
    pub flags: c_int,
    pub alloc_len: c_int,
    // ---- private from here on ----
    magic: u64,
    buf: Vec<u8>,
    payload_off: usize,
    d1_off: usize,
    /// Connection the message came in on (for rts); 0 when none.
    pub rts_conn: u64,
}

const STD_PAYLOAD_OFF: usize = TP_HDR_LEN + HDR_LEN + D1_LEN;

impl Mbuf {
    /// A fresh message with room for `cap` payload bytes.
    pub fn alloc(cap: usize) -> Box<Mbuf> {
        let mut m = Box::new(Mbuf {
            state: RMR_OK,
            mtype: -1,
            len: 0,
            payload: std::ptr::null_mut(),
            xaction: std::ptr::null_mut(),
            sub_id: -1,
            tp_state: 0,
            tp_buf: std::ptr::null_mut(),
            header: std::ptr::null_mut(),
            id: std::ptr::null_mut(),
            flags: 0,
            alloc_len: 0,
            magic: MAGIC,
            buf: Vec::new(),
            payload_off: STD_PAYLOAD_OFF,
            d1_off: TP_HDR_LEN + HDR_LEN,
            rts_conn: 0,
        });
        m.buf = vec![0u8; STD_PAYLOAD_OFF + cap];
        m.reset_fresh();
        m
    }

    pub fn is_valid(&self) -> bool {
        self.magic == MAGIC
    }

    /// Mark as freed so a double free is caught instead of corrupting memory.
    pub fn invalidate(&mut self) {
        self.magic = 0;
    }

    fn repoint(&mut self) {
        let base = self.buf.as_mut_ptr();
        // The Vec is never resized while these pointers are in use: every resize goes
        // through a function that calls repoint() afterwards.
        self.tp_buf = base.cast();
        self.header = base.wrapping_add(TP_HDR_LEN).cast();
        self.xaction = base.wrapping_add(TP_HDR_LEN + frame::OFF_XID);
        self.payload = base.wrapping_add(self.payload_off);
        self.alloc_len = self.buf.len().min(i32::MAX as usize) as c_int;
    }

    /// A fresh message with `cap` payload bytes and a trace area of `tr` bytes (zeroed).
    pub fn alloc_traced(cap: usize, tr: usize) -> Box<Mbuf> {
        let mut m = Mbuf::alloc(cap);
        if tr > 0 {
            m.set_trace_len(tr);
        }
        m
    }

    /// Bytes of the trace area (the header's second length field).
    pub fn trace_len(&self) -> usize {
        frame::get_u32_be(self.header(), frame::OFF_LEN1) as usize
    }

    fn trace_off(&self) -> usize {
        TP_HDR_LEN + frame::get_u32_be(self.header(), frame::OFF_LEN0) as usize
    }

    pub fn trace(&self) -> &[u8] {
        let o = self.trace_off();
        &self.buf[o..o + self.trace_len()]
    }

    pub fn trace_mut(&mut self) -> &mut [u8] {
        let (o, n) = (self.trace_off(), self.trace_len());
        &mut self.buf[o..o + n]
    }

    /// Give the message a trace area of `tr` bytes (zeroed), keeping the header, d1, d2 and
    /// the payload (capacity and bytes): what RMR's realloc does when the trace size changes.
    pub fn set_trace_len(&mut self, tr: usize) {
        let (old_tr, t_off) = (self.trace_len(), self.trace_off());
        if old_tr == tr {
            return;
        }
        let data_off = t_off + old_tr; // d1, d2, payload follow the trace
        let mut nb = Vec::with_capacity(self.buf.len() + tr);
        nb.extend_from_slice(&self.buf[..t_off]);
        nb.resize(t_off + tr, 0);
        nb.extend_from_slice(&self.buf[data_off..]);
        self.buf = nb;
        frame::put_u32_be(&mut self.buf[TP_HDR_LEN..], frame::OFF_LEN1, tr as u32);
        let shift = |off: usize| off + tr - old_tr;
        self.d1_off = shift(self.d1_off);
        self.payload_off = shift(self.payload_off);
        self.repoint();
    }

    /// Reinitialise as a fresh, empty message keeping the buffer (as RMR does after a
    /// successful send; a trace area keeps its size, zeroed, as RMR's new buffer has).
    pub fn reset_fresh(&mut self) {
        let tr = if self.buf.len() >= TP_HDR_LEN + frame::HDR_LEN {
            self.trace_len()
        } else {
            0
        };
        self.reset_standard();
        if tr > 0 {
            self.set_trace_len(tr);
        }
    }

    fn reset_standard(&mut self) {
        if self.buf.len() < STD_PAYLOAD_OFF {
            self.buf.resize(STD_PAYLOAD_OFF, 0);
        }
        frame::init_header(&mut self.buf[TP_HDR_LEN..]);
        self.buf[TP_HDR_LEN + HDR_LEN..STD_PAYLOAD_OFF].fill(0);
        self.payload_off = STD_PAYLOAD_OFF;
        self.d1_off = TP_HDR_LEN + HDR_LEN;
        self.state = RMR_OK;
        self.tp_state = 0;
        self.mtype = -1;
        self.sub_id = -1;
        self.len = 0;
        self.flags = 0;
        self.rts_conn = 0;
        self.repoint();
    }

    /// Take a received frame into this buffer (in place, so the caller's pointer stays).
    pub fn load(&mut self, msg: Msg) {
        self.buf = msg.buf;
        self.payload_off = msg.info.payload_off;
        self.d1_off = msg.info.d1_off;
        self.rts_conn = msg.conn;
        self.state = RMR_OK;
        self.tp_state = 0;
        self.mtype = msg.info.mtype;
        self.sub_id = msg.info.sub_id;
        self.len = msg.info.plen as c_int;
        self.flags = 0;
        self.repoint();
    }

    pub fn payload_cap(&self) -> usize {
        self.buf.len() - self.payload_off
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let o = self.payload_off;
        &mut self.buf[o..]
    }

    pub fn header(&self) -> &[u8] {
        &self.buf[TP_HDR_LEN..]
    }

    pub fn header_mut(&mut self) -> &mut [u8] {
        &mut self.buf[TP_HDR_LEN..]
    }

    pub fn payload_slice(&self) -> &[u8] {
        let n = self.used_len();
        &self.buf[self.payload_off..self.payload_off + n]
    }

    /// The user's len, clamped to what the buffer holds (a bad len must not overrun).
    pub fn used_len(&self) -> usize {
        (self.len.max(0) as usize).min(self.payload_cap())
    }

    pub fn has_d1(&self) -> bool {
        self.payload_off > self.d1_off
    }

    /// Grow (or keep) the payload in place; `copy` keeps the old payload bytes.
    pub fn grow(&mut self, new_cap: usize, copy: bool) {
        if new_cap <= self.payload_cap() {
            return;
        }
        let mut nb = vec![0u8; self.payload_off + new_cap];
        let keep = if copy {
            self.buf.len()
        } else {
            self.payload_off
        };
        nb[..keep].copy_from_slice(&self.buf[..keep]);
        self.buf = nb;
        self.repoint();
    }

    /// A deep copy (private state included, connection reference kept).
    pub fn clone_with_cap(&self, cap: usize, copy: bool) -> Box<Mbuf> {
        let mut m = Mbuf::alloc(0);
        let cap = cap.max(if copy { self.payload_cap() } else { 0 });
        m.buf = vec![0u8; self.payload_off + cap];
        let keep = if copy {
            self.buf.len()
        } else {
            self.payload_off
        };
        m.buf[..keep].copy_from_slice(&self.buf[..keep]);
        m.payload_off = self.payload_off;
        m.d1_off = self.d1_off;
        m.rts_conn = self.rts_conn;
        m.state = self.state;
        m.mtype = self.mtype;
        m.sub_id = self.sub_id;
        m.len = if copy { self.len } else { 0 };
        m.tp_state = self.tp_state;
        m.repoint();
        m
    }

    /// Fill the header from the public fields and our identity, write the prefix, and
    /// return the bytes to put on the wire.
    pub fn wire(&mut self, src: &[u8], srcip: &[u8], call_id: Option<u8>) -> &[u8] {
        let plen = self.used_len();
        let (mtype, sub_id) = (self.mtype, self.sub_id);
        {
            let h = self.header_mut();
            frame::put_u32_be(h, frame::OFF_MTYPE, mtype as u32);
            frame::put_u32_be(h, frame::OFF_PLEN, plen as u32);
            frame::put_u32_be(h, frame::OFF_SUBID, sub_id as u32);
            frame::put_cstr(h, frame::OFF_SRC, frame::SRC_LEN, src);
            frame::put_cstr(h, frame::OFF_SRCIP, frame::SRCIP_LEN, srcip);
            let mut flags = frame::get_u32_be(h, frame::OFF_FLAGS);
            match call_id {
                Some(_) => flags |= frame::HFL_CALL_MSG,
                None => flags &= !frame::HFL_CALL_MSG,
            }
            frame::put_u32_be(h, frame::OFF_FLAGS, flags);
        }
        if let Some(id) = call_id {
            if self.has_d1() {
                let d = self.d1_off;
                self.buf[d] = id;
            }
        }
        let total = self.payload_off + plen;
        frame::write_prefix(&mut self.buf[..TP_HDR_LEN], total as u32);
        &self.buf[..total]
    }

    /// Clear d1's call id (plain sends carry 0).
    pub fn clear_call_id(&mut self) {
        if self.has_d1() {
            let d = self.d1_off;
            self.buf[d] = 0;
        }
    }

    pub fn set_meid(&mut self, meid: &[u8]) {
        frame::put_cstr(self.header_mut(), frame::OFF_MEID, frame::MEID_LEN, meid);
    }

    pub fn meid(&self) -> &[u8] {
        frame::get_cstr(self.header(), frame::OFF_MEID, frame::MEID_LEN)
    }

    pub fn src(&self) -> &[u8] {
        frame::get_cstr(self.header(), frame::OFF_SRC, frame::SRC_LEN)
    }

    pub fn srcip(&self) -> &[u8] {
        frame::get_cstr(self.header(), frame::OFF_SRCIP, frame::SRCIP_LEN)
    }

    pub fn xid(&self) -> &[u8] {
        &self.header()[frame::OFF_XID..frame::OFF_XID + frame::XID_LEN]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_c() {
        // rmr_mbuf_t on LP64: ints and pointers with natural alignment.
        assert_eq!(std::mem::offset_of!(Mbuf, state), 0);
        assert_eq!(std::mem::offset_of!(Mbuf, mtype), 4);
        assert_eq!(std::mem::offset_of!(Mbuf, len), 8);
        assert_eq!(std::mem::offset_of!(Mbuf, payload), 16);
        assert_eq!(std::mem::offset_of!(Mbuf, xaction), 24);
        assert_eq!(std::mem::offset_of!(Mbuf, sub_id), 32);
        assert_eq!(std::mem::offset_of!(Mbuf, tp_state), 36);
        assert_eq!(std::mem::offset_of!(Mbuf, tp_buf), 40);
        assert_eq!(std::mem::offset_of!(Mbuf, header), 48);
        assert_eq!(std::mem::offset_of!(Mbuf, id), 56);
        assert_eq!(std::mem::offset_of!(Mbuf, flags), 64);
        assert_eq!(std::mem::offset_of!(Mbuf, alloc_len), 68);
    }

    #[test]
    fn wire_fixed_fields() {
        let mut m = Mbuf::alloc(16);
        m.mtype = 12050;
        m.sub_id = 42;
        m.len = 3;
        m.set_meid(b"gnb1");
        m.buf[STD_PAYLOAD_OFF..STD_PAYLOAD_OFF + 3].copy_from_slice(b"abc");
        let w = m.wire(b"host:4560", b"127.0.0.1:4560", None).to_vec();
        assert_eq!(w.len(), 50 + 280 + 4 + 3);
        let i = frame::parse(&w).unwrap();
        assert_eq!(i.mtype, 12050);
        assert_eq!(i.sub_id, 42);
        assert_eq!(i.plen, 3);
        assert_eq!(&w[i.payload_off..], b"abc");
        assert_eq!(&w[50 + 140..50 + 145], b"gnb1\0");
        assert_eq!(&w[50 + 8..50 + 12], &[0, 0, 0, 3]);
        assert_eq!(
            &w[50 + 192..50 + 216],
            &[0, 0, 0, 0, 0, 0, 1, 24, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 42]
        );
    }

    #[test]
    fn grow_keeps_payload_and_pointer_fields() {
        let mut m = Mbuf::alloc(4);
        m.buf[STD_PAYLOAD_OFF..STD_PAYLOAD_OFF + 4].copy_from_slice(b"wxyz");
        m.grow(1000, true);
        assert_eq!(m.payload_cap(), 1000);
        assert_eq!(&m.buf[STD_PAYLOAD_OFF..STD_PAYLOAD_OFF + 4], b"wxyz");
        assert_eq!(m.payload, m.buf.as_mut_ptr().wrapping_add(STD_PAYLOAD_OFF));
    }
}
