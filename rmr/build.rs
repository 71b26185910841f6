// The cdylib must carry the soname O-RAN SC's library has, so that glibc matches an
// already-loaded copy when ricxappframe dlopens "librmr_si.so" by name.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librmr_si.so");
    println!("cargo:rerun-if-changed=build.rs");
}
