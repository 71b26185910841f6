//! octoric's RMR: a librmr_si.so with RMR 4.9's C API, `rmr_mbuf_t` layout and SI95 wire
//! format. The C functions in `ffi` are thin wrappers over the safe modules.
#![deny(warnings)]

pub mod consts;
pub mod context;
pub mod ffi;
pub mod frame;
pub mod log;
pub mod mbuf;
pub mod peer;
pub mod route;
pub mod transport;
