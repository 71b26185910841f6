//! SI95 over TCP: one connection object per socket, frame reading, non-blocking sends
//! with RMR's retry semantics.

use std::io::{self, BufReader, Read};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::frame::{self, FrameError, FrameInfo, TP_HDR_LEN};

/// Why a send did not go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// Nothing was written: the socket stayed full for the whole retry budget.
    Retry,
    /// Hard failure (errno); the connection is closed.
    Failed(i32),
}

/// Once part of a frame is written the rest must follow (framing); give a stuck peer
/// this long before dropping the connection.
const PARTIAL_WRITE_LIMIT: Duration = Duration::from_secs(5);

/// Which inbox a connection's frames go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Data,
    Control,
}

#[derive(Debug)]
pub struct Conn {
    pub id: u64,
    pub peer: String,
    pub kind: Kind,
    stream: TcpStream,
    wlock: Mutex<()>,
    alive: AtomicBool,
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn poll_out(fd: i32, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd on the stack, count 1.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    r > 0
}

/// TCP_QUICKACK on (acknowledge at once instead of delaying); best effort, as in RMR.
pub fn set_quickack(stream: &TcpStream) {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket fd and a c_int option of the size given.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_QUICKACK,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

impl Conn {
    pub fn new(id: u64, peer: String, kind: Kind, stream: TcpStream) -> Conn {
        let _ = stream.set_nodelay(true);
        Conn {
            id,
            peer,
            kind,
            stream,
            wlock: Mutex::new(()),
            alive: AtomicBool::new(true),
        }
    }

    pub fn alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Close both directions (wakes this connection's reader thread).
    pub fn close(&self) {
        self.alive.store(false, Ordering::Release);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }

    pub fn reader(&self) -> io::Result<TcpStream> {
        self.stream.try_clone()
    }

    /// Room for a whole frame of `len` bytes now? Checking first keeps partial writes rare,
    /// so a full socket shows as RMR_ERR_RETRY instead of a stalled half-written frame. A
    /// frame larger than the buffer needs an empty queue. The kernel doubles SO_SNDBUF for
    /// its own overhead (and autotuning changes it), hence half of it as payload room.
    fn has_room(&self, fd: i32, len: usize) -> bool {
        let mut outq: libc::c_int = 0;
        // SAFETY: ioctl on our own fd with an int out parameter.
        if unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut outq) } != 0 || outq <= 0 {
            return true;
        }
        let mut sndbuf: libc::c_int = 0;
        let mut l = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt on our own fd with a correctly sized out parameter.
        unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&mut sndbuf as *mut libc::c_int).cast(),
                &mut l,
            );
        }
        let cap = (sndbuf.max(0) as usize) / 2;
        len <= cap && outq as usize + len <= cap
    }

    /// Write one whole frame. `retry_ms`: how long a full socket may delay the start of
    /// the write before RMR_ERR_RETRY (0: one attempt).
    pub fn send(&self, data: &[u8], retry_ms: i32) -> Result<(), SendError> {
        if !self.alive() {
            return Err(SendError::Failed(libc::ENOTCONN));
        }
        let _g = self.wlock.lock().unwrap_or_else(|e| e.into_inner());
        let fd = self.stream.as_raw_fd();
        let mut waited = 0i32;
        while !self.has_room(fd, data.len()) {
            if waited >= retry_ms {
                return Err(SendError::Retry);
            }
            waited += 1;
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut off = 0usize;
        let mut partial_since: Option<Instant> = None;
        while off < data.len() {
            let rest = &data[off..];
            // SAFETY: fd is owned by self.stream (alive for &self); the pointer and length
            // describe the live slice `rest`.
            let n = unsafe {
                libc::send(
                    fd,
                    rest.as_ptr().cast(),
                    rest.len(),
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if n >= 0 {
                off += n as usize;
                continue;
            }
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            if e == libc::EAGAIN || e == libc::EWOULDBLOCK {
                if off == 0 {
                    if waited >= retry_ms {
                        return Err(SendError::Retry);
                    }
                    waited += 1;
                    poll_out(fd, 1);
                } else {
                    // Once part of a frame is out the rest must follow (as RMR does); a
                    // peer that stops reading for too long loses the connection.
                    let t0 = *partial_since.get_or_insert_with(Instant::now);
                    if t0.elapsed() > PARTIAL_WRITE_LIMIT {
                        self.close();
                        return Err(SendError::Failed(libc::ETIMEDOUT));
                    }
                    poll_out(fd, 100);
                }
                continue;
            }
            self.close();
            return Err(SendError::Failed(e));
        }
        Ok(())
    }
}

/// What the frame reader hands over: a validated frame, or a dropped one and why.
pub type FrameResult = Result<(Vec<u8>, FrameInfo), FrameError>;

/// Bounds on what one connection may make the reader hold (issue #43).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A frame must arrive whole within this long once its 50-byte prefix has.
    pub frame_deadline: Duration,
    /// The largest frame a connection may send (what it can make us buffer).
    pub max_frame: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            frame_deadline: Duration::from_secs(10),
            max_frame: 16 * 1024 * 1024,
        }
    }
}

/// Why the reader closed a connection over a limit (the io::Error's inner error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitError {
    /// The frame did not arrive whole within `frame_deadline`.
    Deadline,
    /// The frame declared more than `max_frame` bytes.
    TooBig(usize),
}

impl std::fmt::Display for LimitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitError::Deadline => f.write_str("frame not complete within the frame deadline"),
            LimitError::TooBig(n) => write!(f, "frame of {n} bytes is over the connection's bound"),
        }
    }
}

impl std::error::Error for LimitError {}

/// What frames are read from: a socket (whose reads can be given a deadline) or, for tests
/// and fuzzing, bytes in memory.
pub trait FrameSource: Read {
    /// Reads wait at most `d` from now on (None: without limit).
    fn set_deadline(&self, d: Option<Duration>) -> io::Result<()>;
}

impl FrameSource for TcpStream {
    fn set_deadline(&self, d: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(d)
    }
}

impl FrameSource for &[u8] {
    fn set_deadline(&self, _: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
}

/// The limit a reader error is about, if it is one.
pub fn limit_error(e: &io::Error) -> Option<LimitError> {
    e.get_ref()?.downcast_ref::<LimitError>().copied()
}

/// Read frames until EOF or a fatal error. A frame whose declared lengths do not fit is
/// passed on as an error (and the stream continues: its total length kept us in sync);
/// a bad total length loses the framing, so it ends the stream, as does a frame over
/// `limits` (too big, or not whole within the deadline once its prefix arrived).
pub fn read_frames<R: FrameSource>(
    stream: R,
    limits: Limits,
    mut on_frame: impl FnMut(FrameResult),
) -> io::Result<()> {
    let mut r = BufReader::with_capacity(64 * 1024, stream);
    loop {
        let mut prefix = [0u8; TP_HDR_LEN];
        match r.read_exact(&mut prefix) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let total = match frame::check_total(frame::prefix_total(&prefix)) {
            Ok(t) => t,
            Err(e) => {
                on_frame(Err(e.clone()));
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        };
        if total > limits.max_frame {
            return Err(io::Error::other(LimitError::TooBig(total)));
        }
        // Grow with the data actually received: a peer declaring a huge frame and sending
        // nothing must not make us allocate the whole declared size up front.
        let mut buf = Vec::with_capacity(total.min(64 * 1024));
        buf.extend_from_slice(&prefix);
        let deadline = Instant::now() + limits.frame_deadline;
        let mut timed = false;
        while buf.len() < total {
            if r.buffer().is_empty() {
                // the next read waits on the socket: no longer than the frame's deadline
                let now = Instant::now();
                if now >= deadline {
                    return Err(io::Error::other(LimitError::Deadline));
                }
                r.get_ref().set_deadline(Some(deadline - now))?;
                timed = true;
            }
            let old = buf.len();
            let chunk = (total - old).min(old.max(64 * 1024));
            buf.resize(old + chunk, 0);
            match r.read(&mut buf[old..]) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "connection closed inside a frame",
                    ))
                }
                Ok(n) => buf.truncate(old + n),
                Err(e) => {
                    buf.truncate(old);
                    match e.kind() {
                        io::ErrorKind::Interrupted => {}
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                            return Err(io::Error::other(LimitError::Deadline))
                        }
                        _ => return Err(e),
                    }
                }
            }
        }
        if timed {
            r.get_ref().set_deadline(None)?;
        }
        match frame::parse(&buf) {
            Ok(info) => on_frame(Ok((buf, info))),
            Err(e) => on_frame(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(total: usize) -> Vec<u8> {
        let mut f = vec![0u8; total];
        f[0..4].copy_from_slice(&(total as u32).to_le_bytes());
        f[4..8].copy_from_slice(&(total as u32).to_be_bytes());
        f[8] = b'$';
        f
    }

    #[test]
    fn a_frame_over_the_bound_ends_the_stream() {
        let limits = Limits {
            max_frame: 1000,
            ..Limits::default()
        };
        let data = frame(2000);
        let e = read_frames(&data[..], limits, |_| {}).unwrap_err();
        assert_eq!(limit_error(&e), Some(LimitError::TooBig(2000)));
        // at the bound: read (and handed over, whatever its header says)
        let data = frame(1000);
        let mut n = 0;
        read_frames(&data[..], limits, |_| n += 1).unwrap();
        assert_eq!(n, 1);
    }
}
