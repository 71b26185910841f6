//! The E2AP RICindication envelope, read as `e2sm/envelope.py` (`parse` and
//! `_fast_ric_indication`) reads it, for the usual KPM indication: initiating message,
//! procedure 5, the mandatory IEs plus an optional RICindicationSN, no call process ID, and an
//! E2SM-KPM indication header that is format 1 with the time stamp alone (9 octets; 5 in KPM
//! v02.03, whose time stamp has the seconds only). Anything
//! else is a `Fallback`: the caller takes the Python path, which decides.

use crate::per::{Fallback, Reader};
use std::borrow::Cow;

const MAX_PDU: usize = 1 << 20; // e2sm/codec.py MAX_PDU_BYTES
const PROC_RIC_INDICATION: u8 = 5;
const IE_RAN_FUNCTION_ID: u16 = 5;
const IE_RIC_ACTION_ID: u16 = 15;
const IE_RIC_CALL_PROCESS_ID: u16 = 20;
const IE_HEADER: u16 = 25;
const IE_MESSAGE: u16 = 26;
const IE_SN: u16 = 27;
const IE_TYPE: u16 = 28;
const IE_REQUEST_ID: u16 = 29;

/// What the OCC xApp needs of a RICindication besides the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indication {
    pub requestor: u16,
    pub instance: u16,
    pub ran_function: u16,
    pub action: u8,
    pub sn: Option<u16>,
    pub insert: bool,
    pub ntp: u64, // the header's colletStartTime, NTP 32.32
}

/// `per.py`'s `read_length_prefixed` at octet `pos`: (contents, position after them).
fn octets_at(data: &[u8], pos: usize) -> Result<(Cow<'_, [u8]>, usize), Fallback> {
    let mut r = Reader::new(data);
    r.pos = pos << 3;
    let v = r.length_prefixed()?;
    Ok((v, r.pos >> 3))
}

/// An IE whose type is an unconstrained OCTET STRING: its own length determinant, nothing after.
fn octet_string(v: &[u8]) -> Result<Cow<'_, [u8]>, Fallback> {
    let (inner, end) = octets_at(v, 0)?;
    if end != v.len() {
        return Err(Fallback);
    }
    Ok(inner)
}

/// The envelope of `pdu` and its indication message (borrowed when it came in one piece).
pub fn parse(pdu: &[u8]) -> Result<(Indication, Vec<u8>), Fallback> {
    let value = ies_of(pdu)?;
    let mut ies: [Option<Cow<'_, [u8]>>; 8] = Default::default();
    for_each_ie(&value, |id, v| {
        let slot = match id {
            IE_REQUEST_ID => 0,
            IE_RAN_FUNCTION_ID => 1,
            IE_RIC_ACTION_ID => 2,
            IE_SN => 3,
            IE_TYPE => 4,
            IE_HEADER => 5,
            IE_MESSAGE => 6,
            IE_RIC_CALL_PROCESS_ID => return Err(Fallback),
            _ => 7, // other IEs: kept by the Python path's wire details only
        };
        if ies[slot].is_none() {
            ies[slot] = Some(v); // a repeated IE: the first counts
        }
        Ok(())
    })?;
    let get = |i: usize| ies[i].as_deref().ok_or(Fallback);
    let rid = get(0)?;
    if rid.len() != 5 || rid[0] != 0 {
        return Err(Fallback);
    }
    let rf = get(1)?;
    let act = get(2)?;
    let ty = get(4)?;
    if rf.len() != 2 || act.len() != 1 || ty.len() != 1 || ty[0] & 0xBF != 0 {
        return Err(Fallback);
    }
    let ran_function = ((rf[0] as u16) << 8) | rf[1] as u16;
    if ran_function > 4095 {
        return Err(Fallback);
    }
    let sn = match ies[3].as_deref() {
        None => None,
        Some(s) if s.len() == 2 => Some(((s[0] as u16) << 8) | s[1] as u16),
        Some(_) => return Err(Fallback),
    };
    let header = octet_string(get(5)?)?;
    // 9 octets: KPM v03.00+ (8-octet TimeStamp); 5: v02.03 (4 octets, the seconds)
    if !(header.len() == 9 || header.len() == 5) || header[0] != 0 {
        return Err(Fallback); // optional header fields: the Python path reads those
    }
    let mut ts = [0u8; 8];
    ts[..header.len() - 1].copy_from_slice(&header[1..]);
    let message = octet_string(get(6)?)?.into_owned();
    Ok((
        Indication {
            requestor: ((rid[1] as u16) << 8) | rid[2] as u16,
            instance: ((rid[3] as u16) << 8) | rid[4] as u16,
            ran_function,
            action: act[0],
            sn,
            insert: ty[0] & 0x40 != 0,
            ntp: u64::from_be_bytes(ts),
        },
        message,
    ))
}

/// The RICrequestID (requestor, instance) of a RIC indication, reading no more of it than
/// e2term's relay needs (`envelope.py`'s `request_id`): initiating message, procedure 5, the IE
/// list walked for IE 29. Anything else (another PDU, a malformed one) is a `Fallback`: e2term's
/// Python path takes it and answers as it does.
pub fn request_id(pdu: &[u8]) -> Result<(u16, u16), Fallback> {
    let value = ies_of(pdu)?;
    let mut found = None;
    for_each_ie(&value, |id, v| {
        if id == IE_REQUEST_ID && found.is_none() {
            if v.len() != 5 || v[0] != 0 {
                return Err(Fallback);
            }
            found = Some((
                ((v[1] as u16) << 8) | v[2] as u16,
                ((v[3] as u16) << 8) | v[4] as u16,
            ));
        }
        Ok(())
    })?;
    found.ok_or(Fallback)
}

/// The protocol-IE container of a RIC indication (initiating message, procedure 5,
/// criticality <= 2, one whole open type), or a `Fallback`.
fn ies_of(pdu: &[u8]) -> Result<Cow<'_, [u8]>, Fallback> {
    if pdu.len() < 4 || pdu.len() > MAX_PDU {
        return Err(Fallback);
    }
    // E2AP-PDU: CHOICE ext bit 0, index 0 (initiatingMessage); procedure; criticality <= 2
    if pdu[0] & 0x80 != 0 || (pdu[0] >> 5) & 0x03 != 0 || pdu[1] != PROC_RIC_INDICATION {
        return Err(Fallback);
    }
    if pdu[2] >> 6 > 2 {
        return Err(Fallback);
    }
    let (value, end) = octets_at(pdu, 3)?;
    if end != pdu.len() || value.len() < 3 || value[0] & 0x80 != 0 {
        return Err(Fallback);
    }
    Ok(value)
}

/// Each IE of the container, in order: `f(id, value)`; the container must be used up.
fn for_each_ie<'a>(
    value: &'a [u8],
    mut f: impl FnMut(u16, Cow<'a, [u8]>) -> Result<(), Fallback>,
) -> Result<(), Fallback> {
    let count = ((value[1] as usize) << 8) | value[2] as usize;
    let mut pos = 3;
    for _ in 0..count {
        if pos + 3 > value.len() {
            return Err(Fallback);
        }
        let id = ((value[pos] as u16) << 8) | value[pos + 1] as u16;
        if value[pos + 2] >> 6 > 2 {
            return Err(Fallback);
        }
        let (v, next) = octets_at(value, pos + 3)?;
        pos = next;
        f(id, v)?;
    }
    if pos != value.len() {
        return Err(Fallback);
    }
    Ok(())
}

#[cfg(test)]
mod request_id_tests {
    use super::*;

    #[test]
    fn not_an_indication_falls_back() {
        assert!(request_id(&[0x00, 0x01, 0x00, 0x00]).is_err());
        assert!(request_id(&[]).is_err());
    }
}
