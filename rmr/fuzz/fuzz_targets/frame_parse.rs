//! The frame parser and the stream reader must never panic or over-read, whatever bytes
//! a peer sends.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmr_si::frame;
use rmr_si::transport::{read_frames, Limits};

fuzz_target!(|data: &[u8]| {
    if let Ok(info) = frame::parse(data) {
        // Everything the parser located must be inside the frame.
        assert!(info.payload_off + info.plen <= data.len());
        let _ = info.call_id(data);
    }
    if data.len() >= 9 {
        let _ = frame::check_total(frame::prefix_total(data));
    }
    let mut n = 0usize;
    let _ = read_frames(data, Limits::default(), |r| {
        if let Ok((buf, info)) = r {
            assert!(info.payload_off + info.plen <= buf.len());
        }
        n += 1;
    });
});
