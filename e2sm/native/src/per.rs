//! Aligned-PER reading as `e2sm/per.py` does it: every read bounds-checked; anything out of
//! range is a `Fallback` (the generic decoder then reports the error).

use std::borrow::Cow;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fallback;

const FRAGMENT: usize = 16384;

pub struct Reader<'a> {
    pub data: &'a [u8],
    pub pos: usize, // in bits
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    #[inline]
    pub fn bits(&mut self, n: usize) -> Result<u64, Fallback> {
        let end = self.pos + n;
        if end > self.data.len() * 8 {
            return Err(Fallback);
        }
        let b = self.pos >> 3;
        if n <= 56 && b + 8 <= self.data.len() {
            // one big-endian word holds all n bits (n + the bit offset <= 63)
            let mut w = [0u8; 8];
            w.copy_from_slice(&self.data[b..b + 8]);
            let word = u64::from_be_bytes(w);
            let off = self.pos & 7;
            self.pos = end;
            if n == 0 {
                return Ok(0);
            }
            return Ok((word << off) >> (64 - n));
        }
        let mut v: u64 = 0;
        let mut p = self.pos;
        while p < end {
            let byte = self.data[p >> 3];
            let off = p & 7;
            let take = (8 - off).min(end - p);
            let chunk = (byte >> (8 - off - take)) & ((1u16 << take) - 1) as u8;
            v = (v << take) | chunk as u64;
            p += take;
        }
        self.pos = end;
        Ok(v)
    }

    #[inline]
    pub fn align(&mut self) {
        self.pos = (self.pos + 7) & !7;
    }

    #[inline]
    pub fn octets(&mut self, n: usize) -> Result<&'a [u8], Fallback> {
        self.align();
        let b = self.pos >> 3;
        if b + n > self.data.len() {
            return Err(Fallback);
        }
        self.pos += n << 3;
        Ok(&self.data[b..b + n])
    }

    #[inline]
    pub fn uint(&mut self, n: usize) -> Result<u64, Fallback> {
        let o = self.octets(n)?;
        Ok(o.iter().fold(0u64, |v, &x| (v << 8) | x as u64))
    }

    /// An aligned length determinant of one piece (a fragment is a fallback).
    #[inline]
    pub fn length(&mut self) -> Result<usize, Fallback> {
        self.align();
        let b = self.pos >> 3;
        let first = *self.data.get(b).ok_or(Fallback)?;
        if first < 0x80 {
            self.pos += 8;
            return Ok(first as usize);
        }
        if first < 0xC0 {
            let second = *self.data.get(b + 1).ok_or(Fallback)?;
            self.pos += 16;
            return Ok((((first & 0x3F) as usize) << 8) | second as usize);
        }
        Err(Fallback)
    }

    /// The octets an aligned length determinant announces, fragments joined.
    pub fn length_prefixed(&mut self) -> Result<Cow<'a, [u8]>, Fallback> {
        let data = self.data;
        let mut pos = (self.pos + 7) >> 3;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let b = *data.get(pos).ok_or(Fallback)?;
            let (n, frag) = if b & 0x80 == 0 {
                pos += 1;
                (b as usize, false)
            } else if b & 0xC0 == 0x80 {
                let second = *data.get(pos + 1).ok_or(Fallback)?;
                pos += 2;
                ((((b & 0x3F) as usize) << 8) | second as usize, false)
            } else {
                let m = (b & 0x3F) as usize;
                if !(1..=4).contains(&m) {
                    return Err(Fallback);
                }
                pos += 1;
                (m * FRAGMENT, true)
            };
            if pos + n > data.len() {
                return Err(Fallback);
            }
            if !frag && out.is_empty() {
                self.pos = (pos + n) << 3;
                return Ok(Cow::Borrowed(&data[pos..pos + n]));
            }
            out.extend_from_slice(&data[pos..pos + n]);
            pos += n;
            if !frag {
                self.pos = pos << 3;
                return Ok(Cow::Owned(out));
            }
        }
    }

    /// Only padding (if anything) is left after the current bit.
    #[inline]
    pub fn at_end(&self) -> bool {
        (self.pos + 7) >> 3 == self.data.len()
    }
}
