//! Constants ricxappframe reads through rmr_get_consts (values from RMR 4.9's rmr.h).

use std::os::raw::c_int;

pub const RMR_MAX_XID: c_int = 32;
pub const RMR_MAX_SID: c_int = 32;
pub const RMR_MAX_MEID: c_int = 32;
pub const RMR_MAX_SRC: c_int = 64;
pub const RMR_MAX_RCV_BYTES: c_int = 2048;

pub const RMRFL_NONE: c_int = 0x00;
pub const RMRFL_NOTHREAD: c_int = 0x01;
pub const RMRFL_MTCALL: c_int = 0x02;
pub const RMRFL_AUTO_ALLOC: c_int = 0x03;
pub const RMRFL_NAME_ONLY: c_int = 0x04;

pub const RMR_DEF_SIZE: c_int = 0;
pub const RMR_VOID_MSGTYPE: c_int = -1;
pub const RMR_VOID_SUBID: c_int = -1;

pub const RMR_OK: c_int = 0;
pub const RMR_ERR_BADARG: c_int = 1;
pub const RMR_ERR_NOENDPT: c_int = 2;
pub const RMR_ERR_EMPTY: c_int = 3;
pub const RMR_ERR_NOHDR: c_int = 4;
pub const RMR_ERR_SENDFAILED: c_int = 5;
pub const RMR_ERR_CALLFAILED: c_int = 6;
pub const RMR_ERR_NOWHOPEN: c_int = 7;
pub const RMR_ERR_WHID: c_int = 8;
pub const RMR_ERR_OVERFLOW: c_int = 9;
pub const RMR_ERR_RETRY: c_int = 10;
pub const RMR_ERR_RCVFAILED: c_int = 11;
pub const RMR_ERR_TIMEOUT: c_int = 12;
pub const RMR_ERR_UNSET: c_int = 13;
pub const RMR_ERR_TRUNC: c_int = 14;
pub const RMR_ERR_INITFAILED: c_int = 15;
pub const RMR_ERR_NOTSUPP: c_int = 16;

/// Route-manager message types.
pub const RMRRM_TABLE_DATA: i32 = 20;
pub const RMRRM_REQ_TABLE: i32 = 21;
pub const RMRRM_TABLE_STATE: i32 = 22;

/// The JSON object rmr_get_consts returns.
pub fn consts_json() -> String {
    let ints: &[(&str, c_int)] = &[
        ("RMR_MAX_XID", RMR_MAX_XID),
        ("RMR_MAX_SID", RMR_MAX_SID),
        ("RMR_MAX_MEID", RMR_MAX_MEID),
        ("RMR_MAX_SRC", RMR_MAX_SRC),
        ("RMR_MAX_RCV_BYTES", RMR_MAX_RCV_BYTES),
        ("RMRFL_NONE", RMRFL_NONE),
        ("RMRFL_AUTO_ALLOC", RMRFL_AUTO_ALLOC),
        ("RMRFL_MTCALL", RMRFL_MTCALL),
        ("RMR_DEF_SIZE", RMR_DEF_SIZE),
        ("RMR_VOID_MSGTYPE", RMR_VOID_MSGTYPE),
        ("RMR_VOID_SUBID", RMR_VOID_SUBID),
        ("RMR_OK", RMR_OK),
        ("RMR_ERR_BADARG", RMR_ERR_BADARG),
        ("RMR_ERR_NOENDPT", RMR_ERR_NOENDPT),
        ("RMR_ERR_EMPTY", RMR_ERR_EMPTY),
        ("RMR_ERR_NOHDR", RMR_ERR_NOHDR),
        ("RMR_ERR_SENDFAILED", RMR_ERR_SENDFAILED),
        ("RMR_ERR_CALLFAILED", RMR_ERR_CALLFAILED),
        ("RMR_ERR_NOWHOPEN", RMR_ERR_NOWHOPEN),
        ("RMR_ERR_WHID", RMR_ERR_WHID),
        ("RMR_ERR_OVERFLOW", RMR_ERR_OVERFLOW),
        ("RMR_ERR_RETRY", RMR_ERR_RETRY),
        ("RMR_ERR_RCVFAILED", RMR_ERR_RCVFAILED),
        ("RMR_ERR_TIMEOUT", RMR_ERR_TIMEOUT),
        ("RMR_ERR_UNSET", RMR_ERR_UNSET),
        ("RMR_ERR_TRUNC", RMR_ERR_TRUNC),
        ("RMR_ERR_INITFAILED", RMR_ERR_INITFAILED),
        ("RMR_ERR_NOTSUPP", RMR_ERR_NOTSUPP),
    ];
    let body: Vec<String> = ints.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
    format!("{{ {} }}", body.join(", "))
}
