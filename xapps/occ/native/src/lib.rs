//! The OCC xApp's hot path natively (issue #44): the engine (`engine`, `kernel`), feedback
//! (`feedback`) and the whole indication path (`fast`), behind a C ABI (`ffi`) that the
//! Python xApp loads with ctypes (`xapps/occ/native.py`) and that octoric's RMR library calls
//! from its receive thread (`rmr_octo_set_tap`), so an indication is handled without the
//! Python interpreter. Python keeps control, REST, SDL checkpoints and metrics.

pub mod engine;
pub mod fast;
pub mod feedback;
pub mod ffi;
pub mod kernel;
pub mod trace;
