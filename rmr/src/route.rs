//! Route tables: the RMR text grammar, the table, and endpoint selection.
//!
//! Records (fields split by '|', blanks trimmed, '#' starts a comment line):
//! `newrt|start[|id]`, `newrt|end[|count]`, `updatert|start[|id]`, `updatert|end[|count]`,
//! `rte|<mtype>[,<sender>]|<groups>`, `mse|<mtype>[,<sender>]|<subid>|<groups or %meid>`,
//! `del|<mtype>[,<sender>][|<subid>]`, `meid_map|start[|id]`, `meid_map|end[|count]`,
//! `mme_ar|<owner>|<meid> <meid>...`, `mme_del|<meid> <meid>...`.
//! Groups: ';' separates groups (each gets a copy), ',' separates round-robin members.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Where a signed table's end record carries its signature: `newrt|end|<count>|sig=<hex>`.
const SIG_FIELD: &str = "|sig=";

/// The hex digits of a signature (lowercase or uppercase), or None.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Is `line` (trimmed) a table's end record?
/// A route entry (`mse`, `rte`, `del`) rather than a table's frame or a meid record.
fn is_entry(line: &str) -> bool {
    matches!(
        line.split('|').next().map(str::trim),
        Some("mse" | "rte" | "del")
    )
}

fn is_end(line: &str) -> bool {
    ["newrt|end", "updatert|end", "meid_map|end"]
        .iter()
        .any(|p| line.starts_with(p))
}

/// A route-table parse error (the one error type of this parser).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteError(pub String);

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RouteError {}

fn err<T>(msg: impl Into<String>) -> Result<T, RouteError> {
    Err(RouteError(msg.into()))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Groups of endpoints; every group gets a copy, members are used round robin.
    Groups(Vec<Vec<String>>),
    /// Route by the message's meid through the meid map.
    Meid,
}

/// One parsed record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    NewStart(Option<String>),
    NewEnd(Option<usize>),
    UpdStart(Option<String>),
    UpdEnd(Option<usize>),
    Route {
        mtype: i32,
        sender: Option<String>,
        subid: i32,
        target: Target,
    },
    Del {
        mtype: i32,
        sender: Option<String>,
        subid: i32,
    },
    MeidStart(Option<String>),
    MeidEnd(Option<usize>),
    MmeAr {
        owner: String,
        meids: Vec<String>,
    },
    MmeDel(Vec<String>),
}

fn parse_int(s: &str, what: &str) -> Result<i32, RouteError> {
    s.trim()
        .parse::<i32>()
        .or_else(|_| err(format!("bad {what} {s:?}")))
}

fn opt_field(f: &[&str], i: usize) -> Option<String> {
    f.get(i)
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn opt_count(f: &[&str], i: usize) -> Result<Option<usize>, RouteError> {
    match opt_field(f, i) {
        None => Ok(None),
        Some(s) => s
            .parse::<usize>()
            .map(Some)
            .or_else(|_| err(format!("bad record count {s:?}"))),
    }
}

fn mtype_sender(s: &str) -> Result<(i32, Option<String>), RouteError> {
    let mut it = s.splitn(2, ',');
    let mtype = parse_int(it.next().unwrap_or(""), "message type")?;
    let sender = it
        .next()
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty());
    Ok((mtype, sender))
}

fn valid_endpoint(ep: &str) -> bool {
    match ep.rsplit_once(':') {
        Some((host, port)) => {
            !host.is_empty()
                && port.parse::<u16>().is_ok()
                && ep.len() < 64
                && ep.bytes().all(|c| c.is_ascii_graphic())
        }
        None => false,
    }
}

fn parse_target(s: &str) -> Result<Target, RouteError> {
    let s = s.trim();
    if s == "%meid" {
        return Ok(Target::Meid);
    }
    let mut groups = Vec::new();
    for g in s.split(';') {
        let members: Vec<String> = g
            .split(',')
            .map(|e| e.trim())
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect();
        if members.is_empty() {
            continue;
        }
        for m in &members {
            if !valid_endpoint(m) {
                return err(format!("bad endpoint {m:?}"));
            }
        }
        groups.push(members);
    }
    if groups.is_empty() {
        return err("route has no endpoints");
    }
    Ok(Target::Groups(groups))
}

/// Parse one line. Ok(None) for blank lines and comments. Never panics.
pub fn parse_line(line: &str) -> Result<Option<Record>, RouteError> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let f: Vec<&str> = line.split('|').map(str::trim).collect();
    let need = |n: usize| -> Result<(), RouteError> {
        if f.len() < n {
            err(format!("{} record needs {} fields: {line:?}", f[0], n))
        } else {
            Ok(())
        }
    };
    let rec = match f[0] {
        "newrt" | "updatert" | "meid_map" => {
            need(2)?;
            let upd = f[0] == "updatert";
            let meid = f[0] == "meid_map";
            match (f[1], upd, meid) {
                ("start", false, false) => Record::NewStart(opt_field(&f, 2)),
                ("end", false, false) => Record::NewEnd(opt_count(&f, 2)?),
                ("start", true, _) => Record::UpdStart(opt_field(&f, 2)),
                ("end", true, _) => Record::UpdEnd(opt_count(&f, 2)?),
                ("start", _, true) => Record::MeidStart(opt_field(&f, 2)),
                ("end", _, true) => Record::MeidEnd(opt_count(&f, 2)?),
                (other, _, _) => return err(format!("bad {} action {other:?}", f[0])),
            }
        }
        "rte" => {
            need(3)?;
            let (mtype, sender) = mtype_sender(f[1])?;
            // An optional trailing subid field is accepted by some generators: rte|m|ep|subid.
            Record::Route {
                mtype,
                sender,
                subid: -1,
                target: parse_target(f[2])?,
            }
        }
        "mse" => {
            need(4)?;
            let (mtype, sender) = mtype_sender(f[1])?;
            Record::Route {
                mtype,
                sender,
                subid: parse_int(f[2], "subscription id")?,
                target: parse_target(f[3])?,
            }
        }
        "del" => {
            need(2)?;
            let (mtype, sender) = mtype_sender(f[1])?;
            let subid = match opt_field(&f, 2) {
                Some(s) => parse_int(&s, "subscription id")?,
                None => -1,
            };
            Record::Del {
                mtype,
                sender,
                subid,
            }
        }
        "mme_ar" => {
            need(3)?;
            if !valid_endpoint(f[1]) {
                return err(format!("bad meid owner {:?}", f[1]));
            }
            Record::MmeAr {
                owner: f[1].to_string(),
                meids: f[2].split_whitespace().map(str::to_string).collect(),
            }
        }
        "mme_del" => {
            need(2)?;
            Record::MmeDel(f[1].split_whitespace().map(str::to_string).collect())
        }
        other => return err(format!("unknown record type {other:?}")),
    };
    Ok(Some(rec))
}

/// A group of endpoints used round robin.
#[derive(Debug)]
pub struct Group {
    pub members: Vec<String>,
    next: AtomicUsize,
}

impl Group {
    pub fn new(members: Vec<String>) -> Self {
        Group {
            members,
            next: AtomicUsize::new(0),
        }
    }

    /// The next member, round robin.
    pub fn pick(&self) -> &str {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        &self.members[i % self.members.len()]
    }
}

#[derive(Debug)]
pub enum Entry {
    Groups(Vec<Group>),
    Meid,
}

/// An installed route table (immutable once built; swapped whole).
#[derive(Debug, Default)]
pub struct Table {
    pub id: String,
    pub entries: HashMap<(i32, i32), Arc<Entry>>,
    pub meid_map: HashMap<String, String>,
    /// The end record's generation (`gen=<n>`, octoric's extension), if it had one.
    pub gen: Option<u64>,
}

impl Table {
    /// Lookup by (mtype, subid), falling back to (mtype, -1).
    pub fn lookup(&self, mtype: i32, subid: i32) -> Option<&Arc<Entry>> {
        self.entries
            .get(&(mtype, subid))
            .or_else(|| self.entries.get(&(mtype, -1)))
    }

    pub fn meid_owner(&self, meid: &str) -> Option<&str> {
        self.meid_map.get(meid).map(String::as_str)
    }
}

/// What feeding a line produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Nothing to report (record stored in the pending table).
    None,
    /// A table (or update, or meid map) is complete and should be installed; ack OK.
    Complete { id: String },
    /// A table was abandoned; ack ERR.
    Failed { id: String, reason: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Idle,
    New,
    Update,
    Meid,
}

/// Streaming builder: route-manager pushes arrive as many messages of whole lines.
#[derive(Debug)]
pub struct Builder {
    my_names: Vec<String>,
    mode: Mode,
    id: String,
    count: usize,
    entries: HashMap<(i32, i32), Target>,
    dels: Vec<(i32, i32)>,
    meid_map: HashMap<String, String>,
    meid_dels: Vec<String>,
    /// Last complete state (what the table is built from).
    base_entries: HashMap<(i32, i32), Target>,
    base_meids: HashMap<String, String>,
    base_id: String,
    pub errors: u64,
    /// Route entries skipped as unusable (counted in `errors` too).
    pub skipped: u64,
    /// When set, a table is installed only if its end record carries the HMAC-SHA256 of its
    /// lines under this key (the route manager's; OCTORIC_RMR_RT_KEY): only the route
    /// manager may install routes (issue #17).
    key: Option<Vec<u8>>,
    mac: Option<HmacSha256>,
    pub unsigned: u64,
    /// Generations (issue #43): the end record's `gen=<n>` must exceed the last one installed
    /// from a push (an older or equal table is a replay) and be at least the seed file's.
    last_gen: Option<u64>,
    floor_gen: u64,
    pending_gen: Option<u64>,
    base_gen: Option<u64>,
    /// Tables refused for an old, equal or (signed tables) missing generation.
    pub replayed: u64,
}

/// The `gen=<n>` field of an end record, if any.
pub fn end_generation(line: &str) -> Option<u64> {
    line.split('|')
        .find_map(|f| f.trim().strip_prefix("gen="))
        .and_then(|g| g.trim().parse().ok())
}

impl Builder {
    /// `my_names`: the names a `sender` field must match for a record to apply to us.
    pub fn new(my_names: Vec<String>) -> Self {
        Builder {
            my_names,
            mode: Mode::Idle,
            id: String::new(),
            count: 0,
            skipped: 0,
            entries: HashMap::new(),
            dels: Vec::new(),
            meid_map: HashMap::new(),
            meid_dels: Vec::new(),
            base_entries: HashMap::new(),
            base_meids: HashMap::new(),
            base_id: String::new(),
            errors: 0,
            key: None,
            mac: None,
            unsigned: 0,
            last_gen: None,
            floor_gen: 0,
            pending_gen: None,
            base_gen: None,
            replayed: 0,
        }
    }

    /// Pushed tables must carry at least this generation (the trusted seed file's).
    pub fn set_floor(&mut self, gen: u64) {
        self.floor_gen = self.floor_gen.max(gen);
    }

    /// The generation of the last table installed from a push.
    pub fn last_generation(&self) -> Option<u64> {
        self.last_gen
    }

    /// Refuse a table whose generation is not newer than what we have; None: fine.
    fn stale(&self) -> Option<String> {
        match self.pending_gen {
            None if self.key.is_some() => {
                Some("replayed: signed table without a generation".into())
            }
            None => None,
            Some(g) if g < self.floor_gen => Some(format!(
                "replayed: generation {g} older than the seed's {}",
                self.floor_gen
            )),
            Some(g) => match self.last_gen {
                Some(last) if g <= last => Some(format!("replayed: generation {g}, have {last}")),
                _ => None,
            },
        }
    }

    /// Accept only tables signed with `key` (None or empty: accept every table, as RMR does).
    pub fn with_key(mut self, key: Option<Vec<u8>>) -> Self {
        self.key = key.filter(|k| !k.is_empty());
        self
    }

    /// The MAC over a table's lines: its start line, every record, the end line without the
    /// signature, joined by '\n'. Returns the signature check's verdict at the end line.
    fn authenticate(&mut self, line: &str) -> Option<bool> {
        let key = self.key.as_ref()?;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        if line.contains("|start") && !is_end(line) && line.split('|').nth(1) == Some("start") {
            let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
            m.update(line.as_bytes());
            self.mac = Some(m);
            return None;
        }
        if is_end(line) {
            let (body, sig) = match line.find(SIG_FIELD) {
                Some(i) => (&line[..i], unhex(line[i + SIG_FIELD.len()..].trim())),
                None => (line, None),
            };
            let Some(mut m) = self.mac.take() else {
                return Some(false);
            };
            m.update(b"\n");
            m.update(body.as_bytes());
            return Some(match sig {
                Some(s) => m.verify_slice(&s).is_ok(),
                None => false,
            });
        }
        if let Some(m) = self.mac.as_mut() {
            m.update(b"\n");
            m.update(line.as_bytes());
        }
        None
    }

    fn for_me(&self, sender: &Option<String>) -> bool {
        match sender {
            None => true,
            Some(s) => self.my_names.iter().any(|n| n == s),
        }
    }

    fn start(&mut self, mode: Mode, id: Option<String>) -> Event {
        let ev = if self.mode != Mode::Idle {
            Event::Failed {
                id: self.id.clone(),
                reason: "table not complete".into(),
            }
        } else {
            Event::None
        };
        self.mode = mode;
        self.id = id.unwrap_or_default();
        self.count = 0;
        self.entries.clear();
        self.dels.clear();
        self.meid_map.clear();
        self.meid_dels.clear();
        ev
    }

    fn end(&mut self, mode: Mode, count: Option<usize>) -> Event {
        if self.mode != mode {
            self.errors += 1;
            return Event::Failed {
                id: self.id.clone(),
                reason: "end without start".into(),
            };
        }
        self.mode = Mode::Idle;
        if let Some(c) = count {
            if c != self.count {
                self.errors += 1;
                return Event::Failed {
                    id: self.id.clone(),
                    reason: format!("got {} records, expected {c}", self.count),
                };
            }
        }
        if let Some(reason) = self.stale() {
            self.errors += 1;
            self.replayed += 1;
            return Event::Failed {
                id: self.id.clone(),
                reason,
            };
        }
        if let Some(g) = self.pending_gen {
            self.last_gen = Some(g);
            self.base_gen = Some(g);
        }
        match mode {
            Mode::New => {
                self.base_entries = std::mem::take(&mut self.entries);
                self.base_id = self.id.clone();
            }
            Mode::Update => {
                self.base_id = self.id.clone();
                for k in self.dels.drain(..) {
                    self.base_entries.remove(&k);
                }
                for (k, v) in self.entries.drain() {
                    self.base_entries.insert(k, v);
                }
            }
            Mode::Meid => {
                for m in self.meid_dels.drain(..) {
                    self.base_meids.remove(&m);
                }
                for (k, v) in self.meid_map.drain() {
                    self.base_meids.insert(k, v);
                }
            }
            Mode::Idle => {}
        }
        Event::Complete {
            id: self.id.clone(),
        }
    }

    /// Feed one line. Parse errors inside a table make it fail at its end.
    pub fn feed(&mut self, line: &str) -> Event {
        if self.authenticate(line) == Some(false) && self.mode != Mode::Idle {
            self.errors += 1;
            self.unsigned += 1;
            self.mode = Mode::Idle; // dropped whole: nothing of it is installed
            return Event::Failed {
                id: self.id.clone(),
                reason: "not signed by the route manager".into(),
            };
        }
        if is_end(line.trim()) {
            self.pending_gen = end_generation(line);
        }
        let rec = match parse_line(line) {
            Ok(Some(r)) => r,
            Ok(None) => return Event::None,
            Err(e) => {
                self.errors += 1;
                if matches!(self.mode, Mode::New | Mode::Update) && is_entry(line.trim()) {
                    // RMR 4.9 skips an entry it cannot use and installs the rest: O-RAN SC's
                    // rtmgr, from ric-dep's config, writes one such entry into every table
                    // (`mse|,service-ricplt-e2mgr-rmr.ricplt:3801|-1|...`). It still counts
                    // towards the end record's total.
                    self.count += 1;
                    self.skipped += 1;
                    crate::log::log(
                        crate::log::Level::Warn,
                        &format!("route table {:?}: skipped an unusable entry: {e}", self.id),
                    );
                    return Event::None;
                }
                if self.mode != Mode::Idle {
                    let id = self.id.clone();
                    self.mode = Mode::Idle;
                    return Event::Failed {
                        id,
                        reason: e.to_string(),
                    };
                }
                return Event::None;
            }
        };
        match rec {
            Record::NewStart(id) => self.start(Mode::New, id),
            Record::UpdStart(id) => self.start(Mode::Update, id),
            Record::MeidStart(id) => self.start(Mode::Meid, id),
            Record::NewEnd(c) => self.end(Mode::New, c),
            Record::UpdEnd(c) => self.end(Mode::Update, c),
            Record::MeidEnd(c) => self.end(Mode::Meid, c),
            Record::Route {
                mtype,
                sender,
                subid,
                target,
            } => {
                if matches!(self.mode, Mode::New | Mode::Update) {
                    self.count += 1;
                    if self.for_me(&sender) {
                        self.entries.insert((mtype, subid), target);
                    }
                } else {
                    self.errors += 1;
                }
                Event::None
            }
            Record::Del {
                mtype,
                sender,
                subid,
            } => {
                if self.mode == Mode::Update {
                    self.count += 1;
                    if self.for_me(&sender) {
                        self.dels.push((mtype, subid));
                    }
                } else {
                    self.errors += 1;
                }
                Event::None
            }
            Record::MmeAr { owner, meids } => {
                if self.mode == Mode::Meid {
                    self.count += 1;
                    for m in meids {
                        self.meid_map.insert(m, owner.clone());
                    }
                } else {
                    self.errors += 1;
                }
                Event::None
            }
            Record::MmeDel(meids) => {
                if self.mode == Mode::Meid {
                    self.count += 1;
                    self.meid_dels.extend(meids);
                } else {
                    self.errors += 1;
                }
                Event::None
            }
        }
    }

    /// Build the installable table from the last complete state.
    pub fn table(&self) -> Table {
        let entries = self
            .base_entries
            .iter()
            .map(|(k, t)| {
                let e = match t {
                    Target::Meid => Entry::Meid,
                    Target::Groups(gs) => {
                        Entry::Groups(gs.iter().map(|g| Group::new(g.clone())).collect())
                    }
                };
                (*k, Arc::new(e))
            })
            .collect();
        Table {
            id: self.base_id.clone(),
            entries,
            meid_map: self.base_meids.clone(),
            gen: self.base_gen,
        }
    }
}

/// Parse a whole static file: the last complete `newrt` table, or an error.
pub fn parse_file(text: &str, my_names: Vec<String>) -> Result<Table, RouteError> {
    let mut b = Builder::new(my_names);
    let mut complete = false;
    let mut last_err = None;
    for line in text.lines() {
        match b.feed(line) {
            Event::Complete { .. } => complete = true,
            Event::Failed { reason, .. } => last_err = Some(reason),
            Event::None => {}
        }
    }
    if complete {
        Ok(b.table())
    } else {
        Err(RouteError(last_err.unwrap_or_else(|| {
            "no complete newrt|start ... newrt|end table".to_string()
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RT: &str = "# comment\n\
        newrt|start|t1\n\
        rte|100|a:1\n\
        rte|200|a:1,b:2;c:3\n\
        mse|300|7|d:4\n\
        mse|300|-1|e:5\n\
        rte|400,me:9|f:6\n\
        rte|400,other:9|g:7\n\
        mse|500|-1|%meid\n\
        newrt|end|7\n\
        meid_map|start|m1\n\
        mme_ar|h:8|gnb1 gnb2\n\
        meid_map|end|1\n";

    #[test]
    fn signed_tables_only_when_keyed() {
        fn sign(key: &[u8], lines: &[&str]) -> String {
            let mut m = HmacSha256::new_from_slice(key).unwrap();
            m.update(lines.join("\n").as_bytes());
            let sig: String = m
                .finalize()
                .into_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            format!(
                "{}\n{}|sig={sig}\n",
                lines[..lines.len() - 1].join("\n"),
                lines[lines.len() - 1]
            )
        }
        let lines = [
            "newrt|start|t9",
            "rte|100|127.0.0.1:4560",
            "newrt|end|1|gen=5",
        ];
        let feed = |b: &mut Builder, text: &str| -> Vec<Event> {
            text.split('\n')
                .map(|l| b.feed(l))
                .filter(|e| *e != Event::None)
                .collect()
        };
        let key = b"run-secret".to_vec();
        let mut b = Builder::new(vec![]).with_key(Some(key.clone()));
        // signed with the key: installed
        let ev = feed(&mut b, &sign(&key, &lines));
        assert_eq!(ev, vec![Event::Complete { id: "t9".into() }]);
        assert!(b.table().lookup(100, -1).is_some());
        // unsigned, signed with another key, or tampered after signing: refused, table kept
        let evil = [
            "newrt|start|t10",
            "rte|100|127.0.0.1:9999",
            "newrt|end|1|gen=6",
        ];
        for text in [
            evil.join("\n"),
            sign(b"other", &evil),
            sign(&key, &lines).replace("4560", "9999"),
        ] {
            let ev = feed(&mut b, &text);
            assert!(matches!(&ev[..], [Event::Failed { .. }]), "{text}: {ev:?}");
            assert_eq!(b.table().id, "t9");
        }
        assert_eq!(b.unsigned, 3);
        // replayed (equal generation), older, or without a generation: refused and counted
        let old = [
            "newrt|start|t8",
            "rte|100|127.0.0.1:7777",
            "newrt|end|1|gen=4",
        ];
        let nogen = ["newrt|start|t7", "rte|100|127.0.0.1:7777", "newrt|end|1"];
        for text in [sign(&key, &lines), sign(&key, &old), sign(&key, &nogen)] {
            let ev = feed(&mut b, &text);
            assert!(
                matches!(&ev[..], [Event::Failed { reason, .. }] if reason.starts_with("replayed")),
                "{text}: {ev:?}"
            );
            assert_eq!(b.table().id, "t9");
        }
        assert_eq!(b.replayed, 3);
        // a newer one: installed; below the seed's floor: refused
        let newer = [
            "newrt|start|t11",
            "rte|100|127.0.0.1:4561",
            "newrt|end|1|gen=9",
        ];
        assert_eq!(
            feed(&mut b, &sign(&key, &newer)),
            vec![Event::Complete { id: "t11".into() }]
        );
        assert_eq!(b.table().gen, Some(9));
        let mut seeded = Builder::new(vec![]).with_key(Some(key.clone()));
        seeded.set_floor(6);
        assert!(matches!(
            &feed(&mut seeded, &sign(&key, &lines))[..],
            [Event::Failed { .. }]
        ));
        assert_eq!(
            feed(&mut seeded, &sign(&key, &newer)),
            vec![Event::Complete { id: "t11".into() }]
        );
        // without a key every table is accepted, as RMR 4.9 does
        let mut open = Builder::new(vec![]);
        assert_eq!(
            feed(&mut open, &evil.join("\n")),
            vec![Event::Complete { id: "t10".into() }]
        );
    }

    #[test]
    fn static_table() {
        let t = parse_file(RT, vec!["me:9".into()]).unwrap();
        assert_eq!(t.id, "t1");
        match &**t.lookup(200, 55).unwrap() {
            Entry::Groups(g) => {
                assert_eq!(g.len(), 2);
                assert_eq!(g[0].pick(), "a:1");
                assert_eq!(g[0].pick(), "b:2");
                assert_eq!(g[0].pick(), "a:1");
                assert_eq!(g[1].pick(), "c:3");
            }
            Entry::Meid => panic!(),
        }
        let pick = |m, s| match &**t.lookup(m, s).unwrap() {
            Entry::Groups(g) => g[0].pick().to_string(),
            Entry::Meid => "meid".into(),
        };
        assert_eq!(pick(300, 7), "d:4");
        assert_eq!(pick(300, 8), "e:5");
        assert_eq!(pick(400, -1), "f:6");
        assert_eq!(pick(500, 1), "meid");
        assert_eq!(t.meid_owner("gnb2"), Some("h:8"));
        assert!(t.lookup(999, -1).is_none());
    }

    #[test]
    fn count_mismatch_fails() {
        let e = parse_file("newrt|start\nrte|1|a:1\nnewrt|end|2\n", vec![]).unwrap_err();
        assert!(e.0.contains("expected 2"), "{e}");
        assert!(parse_file("rte|1|a:1\n", vec![]).is_err());
    }

    #[test]
    fn an_unusable_entry_is_skipped_and_counted_as_rmr_4_9_does() {
        // O-RAN SC's rtmgr, from ric-dep's config, writes the first of these into every table
        let text = "newrt|start|t\n\
                    mse|,service-ricplt-e2mgr-rmr.ricplt:3801|-1|10.41.0.7:38000\n\
                    rte|x|a:1\nrte|2|nohostport\nmse|12050|7|e2:38000\nnewrt|end|4\n";
        let mut b = Builder::new(vec![]);
        let evs: Vec<Event> = text.lines().map(|l| b.feed(l)).collect();
        assert!(
            matches!(evs.last(), Some(Event::Complete { .. })),
            "{evs:?}"
        );
        assert_eq!(b.skipped, 3);
        let t = b.table();
        assert!(t.lookup(12050, 7).is_some());
        assert!(t.lookup(2, -1).is_none());
        // a table's frame stays strict: a bad action still fails it
        let e = parse_file("newrt|start\nnewrt|bogus\nnewrt|end\n", vec![]);
        assert!(e.is_err());
    }

    #[test]
    fn updates_and_deletes() {
        let mut b = Builder::new(vec![]);
        for l in ["newrt|start|a", "rte|1|a:1", "rte|2|b:2", "newrt|end|2"] {
            b.feed(l);
        }
        assert_eq!(
            b.feed("updatert|start|u1"),
            Event::None,
            "update start is silent"
        );
        b.feed("rte|3|c:3");
        b.feed("del|1");
        assert_eq!(
            b.feed("updatert|end|2"),
            Event::Complete { id: "u1".into() }
        );
        let t = b.table();
        assert!(t.lookup(1, -1).is_none());
        assert!(t.lookup(2, -1).is_some());
        assert!(t.lookup(3, -1).is_some());
    }

    #[test]
    fn incomplete_table_is_nacked() {
        let mut b = Builder::new(vec![]);
        b.feed("newrt|start|a");
        b.feed("rte|1|a:1");
        match b.feed("newrt|start|b") {
            Event::Failed { id, .. } => assert_eq!(id, "a"),
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn garbage_never_panics() {
        for l in [
            "|",
            "||||",
            "rte",
            "rte|",
            "mse|1|",
            "newrt|",
            "newrt|bogus",
            "del|",
            "mme_ar|",
            "\u{0}",
            "rte|1,|;",
            "rte|1|;,;",
            "mse|1|2|%meid|x",
        ] {
            let _ = parse_line(l);
            let mut b = Builder::new(vec![]);
            b.feed("newrt|start");
            b.feed(l);
            b.feed("newrt|end");
        }
    }
}
