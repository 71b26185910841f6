//! SI95 framing and the RMR v3 message header: pure functions over byte slices.
//!
//! A frame on the socket is: 50-byte transport prefix, RMR header (len0 bytes), trace
//! (len1), d1 (len2), d2 (len3), payload (plen). The prefix's total length counts the
//! prefix itself.

use std::fmt;

/// Transport prefix in front of every message.
pub const TP_HDR_LEN: usize = 50;
/// Position of the '$' marker saying the big-endian length is present.
pub const TP_MARKER_IDX: usize = 8;
pub const TP_MARKER: u8 = b'$';
/// Fixed v3 header length (LP64), which is what we send.
pub const HDR_LEN: usize = 280;
/// d1 length we send (d1[0] is the call id).
pub const D1_LEN: usize = 4;
/// Smallest header we accept: everything up to and including srcip.
pub const MIN_HDR_LEN: usize = HDR_LEN;
pub const RMR_VER: u32 = 3;

pub const OFF_MTYPE: usize = 0;
pub const OFF_PLEN: usize = 4;
pub const OFF_VER: usize = 8;
pub const OFF_XID: usize = 12;
pub const OFF_SID: usize = 44;
pub const OFF_SRC: usize = 76;
pub const OFF_MEID: usize = 140;
pub const OFF_TS: usize = 176;
pub const OFF_FLAGS: usize = 192;
pub const OFF_LEN0: usize = 196;
pub const OFF_LEN1: usize = 200;
pub const OFF_LEN2: usize = 204;
pub const OFF_LEN3: usize = 208;
pub const OFF_SUBID: usize = 212;
pub const OFF_SRCIP: usize = 216;

pub const XID_LEN: usize = 32;
pub const SID_LEN: usize = 32;
pub const SRC_LEN: usize = 64;
pub const MEID_LEN: usize = 32;
pub const SRCIP_LEN: usize = 64;

pub const HFL_HAS_TRACE: u32 = 0x01;
pub const HFL_SUBID: u32 = 0x02;
pub const HFL_CALL_MSG: u32 = 0x04;

/// Largest frame we are willing to buffer (a guard against absurd length fields).
pub const MAX_FRAME: usize = 64 * 1024 * 1024;

/// Why a frame was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// Fewer bytes than the prefix plus a minimal header.
    Short(usize),
    /// The prefix's total length is below the minimum or above MAX_FRAME.
    BadTotal(u64),
    /// len0 smaller than the fixed header.
    BadHeaderLen(u32),
    /// Declared lengths run past the end of the frame.
    LengthsExceedFrame { declared: u64, have: usize },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Short(n) => write!(f, "frame too short ({n} bytes)"),
            FrameError::BadTotal(n) => write!(f, "bad total length {n} in transport prefix"),
            FrameError::BadHeaderLen(n) => write!(f, "header length {n} below {MIN_HDR_LEN}"),
            FrameError::LengthsExceedFrame { declared, have } => {
                write!(
                    f,
                    "declared lengths {declared} exceed frame of {have} bytes"
                )
            }
        }
    }
}

impl std::error::Error for FrameError {}

pub fn get_u32_be(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_be_bytes(a)
}

pub fn put_u32_be(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
}

/// Write the 50-byte transport prefix for a frame of `total` bytes (prefix included).
pub fn write_prefix(prefix: &mut [u8], total: u32) {
    prefix[..TP_HDR_LEN].fill(0);
    prefix[0..4].copy_from_slice(&total.to_ne_bytes());
    prefix[4..8].copy_from_slice(&total.to_be_bytes());
    prefix[TP_MARKER_IDX] = TP_MARKER;
}

/// Total frame length from a prefix (at least 9 bytes), as RMR's receiver computes it:
/// with the marker, the big-endian copy, unless it differs from the native one (an old
/// peer's RTS rewrote only the native copy), then the native one.
pub fn prefix_total(prefix: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&prefix[0..4]);
    let native = u32::from_ne_bytes(a);
    if prefix.len() > TP_MARKER_IDX && prefix[TP_MARKER_IDX] == TP_MARKER {
        a.copy_from_slice(&prefix[4..8]);
        let be = u32::from_be_bytes(a);
        if be != native {
            return native;
        }
        be
    } else {
        native
    }
}

/// Check a prefix's total before reading the rest of the frame.
pub fn check_total(total: u32) -> Result<usize, FrameError> {
    let t = total as usize;
    if !(TP_HDR_LEN + MIN_HDR_LEN..=MAX_FRAME).contains(&t) {
        return Err(FrameError::BadTotal(total as u64));
    }
    Ok(t)
}

/// Where things are in a validated frame (offsets from the frame start, prefix included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    pub mtype: i32,
    pub plen: usize,
    pub flags: u32,
    pub sub_id: i32,
    pub len0: usize,
    pub len1: usize,
    pub len2: usize,
    pub len3: usize,
    /// Offset of d1 in the frame.
    pub d1_off: usize,
    /// Offset of the payload in the frame.
    pub payload_off: usize,
}

impl FrameInfo {
    /// The call id (d1[0]) or 0 when there is no d1.
    pub fn call_id(&self, frame: &[u8]) -> u8 {
        if self.len2 == 0 {
            0
        } else {
            frame[self.d1_off]
        }
    }
}

/// Validate a whole frame (prefix included) and locate its parts. Never panics.
pub fn parse(frame: &[u8]) -> Result<FrameInfo, FrameError> {
    if frame.len() < TP_HDR_LEN + MIN_HDR_LEN {
        return Err(FrameError::Short(frame.len()));
    }
    let h = &frame[TP_HDR_LEN..];
    let len0 = get_u32_be(h, OFF_LEN0);
    if (len0 as usize) < MIN_HDR_LEN {
        return Err(FrameError::BadHeaderLen(len0));
    }
    let len1 = get_u32_be(h, OFF_LEN1) as u64;
    let len2 = get_u32_be(h, OFF_LEN2) as u64;
    let len3 = get_u32_be(h, OFF_LEN3) as u64;
    let plen = get_u32_be(h, OFF_PLEN) as u64;
    let declared = TP_HDR_LEN as u64 + len0 as u64 + len1 + len2 + len3 + plen;
    if declared > frame.len() as u64 {
        return Err(FrameError::LengthsExceedFrame {
            declared,
            have: frame.len(),
        });
    }
    let d1_off = TP_HDR_LEN + len0 as usize + len1 as usize;
    Ok(FrameInfo {
        mtype: get_u32_be(h, OFF_MTYPE) as i32,
        plen: plen as usize,
        flags: get_u32_be(h, OFF_FLAGS),
        sub_id: get_u32_be(h, OFF_SUBID) as i32,
        len0: len0 as usize,
        len1: len1 as usize,
        len2: len2 as usize,
        len3: len3 as usize,
        d1_off,
        payload_off: d1_off + len2 as usize + len3 as usize,
    })
}

/// Initialise a fresh v3 header (280 bytes) with d1 of D1_LEN bytes.
pub fn init_header(h: &mut [u8]) {
    h[..HDR_LEN].fill(0);
    put_u32_be(h, OFF_VER, RMR_VER);
    put_u32_be(h, OFF_LEN0, HDR_LEN as u32);
    put_u32_be(h, OFF_LEN1, 0);
    put_u32_be(h, OFF_LEN2, D1_LEN as u32);
    put_u32_be(h, OFF_LEN3, 0);
    put_u32_be(h, OFF_SUBID, u32::MAX);
}

/// Copy a string into a fixed NUL-terminated field (truncated to leave room for the NUL).
pub fn put_cstr(h: &mut [u8], off: usize, cap: usize, s: &[u8]) {
    let n = s.len().min(cap - 1);
    h[off..off + n].copy_from_slice(&s[..n]);
    h[off + n..off + cap].fill(0);
}

/// A fixed NUL-terminated field's bytes up to the first NUL (or the field's end).
pub fn get_cstr(h: &[u8], off: usize, cap: usize) -> &[u8] {
    let f = &h[off..off + cap];
    let n = f.iter().position(|&c| c == 0).unwrap_or(cap);
    &f[..n]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A golden frame built by hand from RMR-WIRE.md, not with our encoder.
    fn golden(payload: &[u8], trace: &[u8]) -> Vec<u8> {
        let total = 50 + 280 + trace.len() + 4 + payload.len();
        let mut f = vec![0u8; total];
        f[0..4].copy_from_slice(&(total as u32).to_le_bytes());
        f[4..8].copy_from_slice(&(total as u32).to_be_bytes());
        f[8] = b'$';
        let h = 50;
        f[h..h + 4].copy_from_slice(&[0, 0, 0x30, 0x32]); // mtype 12338
        f[h + 4..h + 8].copy_from_slice(&(payload.len() as u32).to_be_bytes());
        f[h + 8..h + 12].copy_from_slice(&[0, 0, 0, 3]);
        f[h + 12..h + 18].copy_from_slice(b"xid-01");
        f[h + 76..h + 90].copy_from_slice(b"gnb-sim:38000\0");
        f[h + 140..h + 150].copy_from_slice(b"gnb_001_01");
        f[h + 192..h + 196].copy_from_slice(&[0, 0, 0, if trace.is_empty() { 0 } else { 1 }]);
        f[h + 196..h + 200].copy_from_slice(&[0, 0, 1, 24]); // 280
        f[h + 200..h + 204].copy_from_slice(&(trace.len() as u32).to_be_bytes());
        f[h + 204..h + 208].copy_from_slice(&[0, 0, 0, 4]);
        f[h + 212..h + 216].copy_from_slice(&[0, 0, 0, 77]);
        f[h + 216..h + 230].copy_from_slice(b"127.0.0.1:4560");
        let mut o = h + 280;
        f[o..o + trace.len()].copy_from_slice(trace);
        o += trace.len();
        f[o] = 0; // call id
        o += 4;
        f[o..].copy_from_slice(payload);
        f
    }

    #[test]
    fn golden_frame_decodes() {
        let f = golden(b"hello", b"");
        assert_eq!(prefix_total(&f) as usize, f.len());
        let i = parse(&f).unwrap();
        assert_eq!(i.mtype, 12338);
        assert_eq!(i.plen, 5);
        assert_eq!(i.sub_id, 77);
        assert_eq!(i.len0, 280);
        assert_eq!(&f[i.payload_off..i.payload_off + i.plen], b"hello");
        let h = &f[TP_HDR_LEN..];
        assert_eq!(get_cstr(h, OFF_MEID, MEID_LEN), b"gnb_001_01");
        assert_eq!(get_cstr(h, OFF_SRC, SRC_LEN), b"gnb-sim:38000");
        assert_eq!(&h[OFF_XID..OFF_XID + 6], b"xid-01");
        assert_eq!(i.call_id(&f), 0);
    }

    #[test]
    fn golden_frame_with_trace_honours_lengths() {
        let f = golden(b"pay", b"TRACEDATA");
        let i = parse(&f).unwrap();
        assert_eq!(i.len1, 9);
        assert_eq!(i.flags & HFL_HAS_TRACE, 1);
        assert_eq!(&f[i.payload_off..i.payload_off + 3], b"pay");
    }

    #[test]
    fn grown_header_is_honoured() {
        // A future header 16 bytes longer: payload must still be found through len0.
        let mut f = golden(b"abc", b"");
        f.splice(50 + 280..50 + 280, [0xEEu8; 16]);
        let total = f.len() as u32;
        write_prefix(&mut f, total);
        put_u32_be(&mut f[50..], OFF_LEN0, 296);
        let i = parse(&f).unwrap();
        assert_eq!(&f[i.payload_off..], b"abc");
    }

    #[test]
    fn lengths_past_the_end_are_rejected() {
        let mut f = golden(b"hello", b"");
        put_u32_be(&mut f[50..], OFF_PLEN, 6);
        assert!(matches!(
            parse(&f),
            Err(FrameError::LengthsExceedFrame { .. })
        ));
        let mut f = golden(b"hello", b"");
        put_u32_be(&mut f[50..], OFF_LEN1, u32::MAX);
        assert!(parse(&f).is_err());
        let mut f = golden(b"hello", b"");
        put_u32_be(&mut f[50..], OFF_LEN0, 12);
        assert_eq!(parse(&f), Err(FrameError::BadHeaderLen(12)));
        assert!(matches!(parse(&f[..100]), Err(FrameError::Short(100))));
    }

    #[test]
    fn prefix_rules() {
        let mut p = [0u8; 50];
        write_prefix(&mut p, 400);
        assert_eq!(&p[0..4], &400u32.to_le_bytes());
        assert_eq!(&p[4..8], &[0, 0, 1, 0x90]);
        assert_eq!(p[8], b'$');
        assert_eq!(&p[9..13], &[0, 0, 0, 0]);
        assert_eq!(prefix_total(&p), 400);
        // Without the marker only the native copy counts.
        p[8] = 0;
        p[4..8].copy_from_slice(&999u32.to_be_bytes());
        assert_eq!(prefix_total(&p), 400);
        // With the marker and differing copies, the native one wins.
        p[8] = b'$';
        assert_eq!(prefix_total(&p), 400);
        assert!(check_total(10).is_err());
        assert!(check_total(u32::MAX).is_err());
        assert_eq!(check_total(400).unwrap(), 400);
    }

    #[test]
    fn cstr_fields() {
        let mut h = vec![0xFFu8; HDR_LEN];
        init_header(&mut h);
        put_cstr(&mut h, OFF_MEID, MEID_LEN, &[b'a'; 40]);
        assert_eq!(get_cstr(&h, OFF_MEID, MEID_LEN).len(), 31);
        put_cstr(&mut h, OFF_MEID, MEID_LEN, b"x");
        assert_eq!(get_cstr(&h, OFF_MEID, MEID_LEN), b"x");
        assert_eq!(get_u32_be(&h, OFF_SUBID), u32::MAX);
        assert_eq!(get_u32_be(&h, OFF_LEN0), 280);
    }
}
