//! The route-table parser (single lines, whole files and the streaming builder) must never
//! panic, and whatever it installs must be usable for lookups and round robin.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmr_si::route::{self, Builder, Entry};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let _ = route::parse_line(line);
    }
    if let Ok(t) = route::parse_file(&text, vec!["me:1".into()]) {
        for ((mtype, subid), e) in &t.entries {
            assert!(t.lookup(*mtype, *subid).is_some());
            if let Entry::Groups(gs) = &**e {
                for g in gs {
                    let _ = g.pick();
                }
            }
        }
    }
    let mut b = Builder::new(vec!["me:1".into()]);
    for line in text.split('\n') {
        let _ = b.feed(line);
    }
    let _ = b.table();
});
